"""Symbolic sizes: ``dynamic=True``, ``mark_dynamic`` and PyTorch's automatic dynamic.

A dynamic dim is guarded by rank (and dtype, device...) only, not by its size, except that
sizes 0 and 1 stay specialised as in PyTorch (broadcasting differs there). Which dims: every
dim of every tensor argument with ``dynamic=True``; with ``dynamic=None`` (the default) the
dims marked by ``mark_dynamic`` and, after a recompile caused by a size change, the dims that
changed (automatic dynamic); none with ``dynamic=False``.

The capture records sizes read in Python as ``prim::size`` values (``jit/symbolic.py``), so
``x.view(x.size(0), -1)`` replays for any batch. A graph is size-generic unless the user's
code turned a size into a plain Python value (compared it, ``int()``, ``range()``), or the
graph passes a constant equal to a dynamic dim's size to a size argument of an op (``view``'s
sizes, ``narrow``'s length: a size baked in another way): then
the function falls back to specialising every size, with a ``recompiles`` log line saying
why. A generic graph replays its specialised program for the captured sizes and its
dispatching code (each op's shape rule run again) for the others.
"""

from __future__ import annotations

import contextlib
import functools
import sys

import ember
from ember._tensor import Tensor
from ember.dispatcher.layers import STACK
from ember.jit.ops import has_side_effects
from ember.jit.symbolic import SymInt
from ember.jit.tracer import capture

from . import joint_dynamic, logs, replay, replay_dynamic, size_guards, size_rules, sizes
from .size_guards import COMPARING

_UNBUILT = object()

# int methods that turn a size into a plain value the trace cannot follow
_BAKING = (
    "__bool__", "__index__", "__int__", "__float__", "__eq__", "__ne__", "__lt__", "__le__",
    "__gt__", "__ge__", "__format__", "__str__", "__truediv__", "__rtruediv__", "__pow__",
)  # fmt: skip


def marked(leaves) -> dict:
    """``{leaf position: dims}`` marked by ``mark_dynamic`` (and ``maybe_mark_dynamic``)."""
    found = {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            marks = leaf.__dict__.get("_dynamo_dynamic_indices", set()) | leaf.__dict__.get(
                "_dynamo_weak_dynamic_indices", set()
            )
            if marks:
                found[i] = frozenset(marks)
    return found


def without_static(dims: dict, leaves) -> dict:
    """``dims`` less those ``mark_static`` marked (they stay specialised)."""
    kept = {}
    for i, ds in dims.items():
        leaf = leaves[i] if i < len(leaves) else None
        static = leaf.__dict__.get("_dynamo_static_indices", ()) if leaf is not None else ()
        if ds - set(static):
            kept[i] = frozenset(ds - set(static))
    return kept


def every_dim(leaves) -> dict:
    return {
        i: frozenset(range(len(leaf._shape)))
        for i, leaf in enumerate(leaves)
        if isinstance(leaf, Tensor)
    }


def merge(a: dict | None, b: dict) -> dict:
    merged = dict(a or {})
    for i, dims in b.items():
        merged[i] = merged.get(i, frozenset()) | dims
    return merged


def changed_dims(old: tuple, new: tuple) -> dict | None:
    """The dims whose sizes differ between two guard keys' leaves, or None when something else
    differs too (a dtype, a rank, a constant: no automatic dynamic then)."""
    if old[0] != new[0] or len(old[1]) != len(new[1]):
        return None
    found = {}
    for i, (a, b) in enumerate(zip(old[1], new[1])):
        if a == b:
            continue
        if len(a) != 4 or len(b) != 4 or a[1:] != b[1:] or len(a[0]) != len(b[0]):
            return None
        found[i] = frozenset(d for d, (x, y) in enumerate(zip(a[0], b[0])) if x != y)
    return found or None


class Reads:
    """What a capture's code did with sizes: ``bakes`` (turned into plain values: ``int()``,
    ``range()``...) and ``compares`` (comparisons and truth tests: size_guards.py)."""

    def __init__(self):
        self.bakes: list = []
        self.compares: list = []  # size_guards.read's results


@contextlib.contextmanager
def watching_sizes(dims: dict):
    """While a capture runs: what the user's code did with the sizes of the dynamic ``dims``
    (``{graph input index: dims}``; the others are guarded by value) (``Reads``)."""
    reads = Reads()
    saved = []

    def wrap(name, original):
        def method(self, *args):
            result = original(self, *args)
            state = self._state
            frame = sys._getframe(1)
            if (
                state.recording()
                and not _in_ember(frame)
                and size_guards.dynamic(self, state, dims)
            ):
                where = _where(frame)
                other = args[0] if args else None
                if (
                    name in COMPARING
                    and type(result) is bool
                    and (not args or isinstance(other, int))
                ):
                    found = size_guards.read(name, self, other, result, where, state)
                    reads.compares.append(found)
                else:
                    reads.bakes.append(f"{name} of a size in {where}")
            return result

        return method

    for name in _BAKING:
        original = getattr(int, name)
        saved.append((name, SymInt.__dict__.get(name)))
        setattr(SymInt, name, wrap(name, original))
    try:
        yield reads
    finally:
        for name, before in saved:
            if before is None:
                delattr(SymInt, name)
            else:
                setattr(SymInt, name, before)


def _in_ember(frame) -> bool:
    return (frame.f_globals.get("__name__") or "").startswith("ember")


def _where(frame) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def not_generic(graph, leaves, dims: dict, bakes: list) -> str | None:
    """Why the captured graph cannot serve other sizes of the dynamic dims, or None."""
    if bakes:
        return f"the code read a size as a Python value ({bakes[0]})"
    why = size_rules.counted(graph, _by_tensor(leaves, dims))[1]
    if why is not None:  # no guard can say the count: every size specialised
        return why
    sizes = {leaves[i]._shape[d] for i, ds in dims.items() for d in ds if leaves[i]._shape[d] > 1}
    for node in graph.nodes():
        if node.kind() != "prim::Constant" or not node.hasAttribute("value"):
            continue
        value = node["value"]
        numbers = value if isinstance(value, (list, tuple)) else [value]
        found = [n for n in numbers if type(n) is int and n in sizes]
        if found and _sized(node.output()):
            return f"the graph holds the size {found[0]} of a dynamic dim as a constant"
    return None


def count_guards(graph, leaves, dims: dict) -> list:
    """Guards on the number of outputs of the ops that split a dynamic dim (size_rules.py),
    as size_guards.read's results: a call with another count captures again, as in PyTorch."""
    if graph is None:  # a training step's region without a forward graph
        return []
    counts = size_rules.counted(graph, _by_tensor(leaves, dims))[0]
    inputs = list(graph.inputs())
    return [size_guards.outputs_count(counted, inputs) for counted in counts]


def _by_tensor(leaves, dims: dict) -> dict:
    """``dims`` by graph input (tensor) index rather than leaf position."""
    tensors = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
    return {k: dims[i] for k, i in enumerate(tensors) if i in dims}


def _sized(value) -> bool:
    """Whether ``value`` reaches an op argument that is a size (an ``int`` or ``int[]`` other
    than a dim: ``view``'s sizes, ``narrow``'s length...), directly or through a list."""
    from ember.jit.ops import resolve

    for user, offset in value.uses():
        kind = user.kind()
        if kind == "prim::ListConstruct":
            if _sized(user.output()):
                return True
            continue
        op = resolve(kind) if not kind.startswith("prim::") else None
        if op is None or offset >= len(op.schema.args):
            continue
        arg = op.schema.args[offset]
        if arg.type == "int" and not arg.name.startswith("dim"):  # dim, dims, dim0...: not sizes
            return True
    return False


class DynamicRegion:
    """A size-generic region: its specialised program for the captured sizes, one program
    for every other size (replay_dynamic.py: fused kernels that take the sizes per call,
    buffers sized per call), built at the first call at another size; with gradients, one
    forward/backward pair for every size (joint_dynamic.py); its dispatching code where
    neither can be built (the reason in the ``recompiles`` log) or a layer must see the ops."""

    def __init__(self, region, tensors, dims: dict, name: str = ""):
        self.region = region
        self.graph = region.graph
        self.shapes = [t._shape for t in tensors]
        self.dims = dims  # {tensor index: its dynamic dims}
        self.name = name
        self.generic = _UNBUILT
        self.pair = _UNBUILT  # joint_dynamic.py's pair: calls with gradients, every size
        self.fixed: list = []  # (tensor index, dim, size): dynamic dims the program fixes

    def run(self, root, tensors):
        region = self.region
        plain = STACK.grad_only_layers is STACK.layers
        # the captured sizes: its specialised program, or its pair unless the generic one
        # came first (one pair built, not two)
        captured = all(t._shape == s for t, s in zip(tensors, self.shapes))
        generic_pair = isinstance(self.pair, joint_dynamic.GenericJoint)
        if captured and (not generic_pair or isinstance(region.joint, joint_dynamic.Joint)):
            return region.run(root, tensors)
        if plain and _records(self.graph):  # with gradients: the generic pair
            flat = self._train(root, tensors)
            if flat is not None:
                return region.rebuild(flat)
            return region.rebuild(
                region.fn(root, *tensors) if root is not None else region.fn(*tensors)
            )
        generic = self.generic
        if generic is _UNBUILT and plain and not _records(self.graph):
            return region.rebuild(self._build(root, tensors))
        flat = None
        if generic is not None and generic is not _UNBUILT and plain and self._serves(tensors):
            flat = generic(root, *tensors) if root is not None else generic(*tensors)
        if flat is None:
            flat = region.fn(root, *tensors) if root is not None else region.fn(*tensors)
        return region.rebuild(flat)

    def _train(self, root, tensors):
        """The call's outputs through the size-generic forward/backward pair (joint_dynamic.py,
        built at the first call with gradients at other sizes), or None."""
        pair = self.pair
        if pair is _UNBUILT:
            pair = self.pair = joint_dynamic.build(
                self.region, root, tensors, self.shapes, self.dims, self.name
            )
        if pair is None or not pair.serves(tensors):
            return None
        return pair.run(root, tensors)

    def _serves(self, tensors) -> bool:
        """Whether the generic program serves these sizes (its fixed dims unchanged)."""
        return all(tensors[k]._shape[d] == n for k, d, n in self.fixed)

    def _build(self, root, tensors):
        """The call's outputs through the dispatching code, traced; the generic program built
        from that trace and two probes (sizes.py), or None with the reason logged."""
        fn = self.region.fn
        call = (lambda *ts: fn(root, *ts)) if root is not None else fn
        why = None
        if any(has_side_effects(node) for node in self.graph.nodes()):
            # a probe would write into a buffer (batch norm's statistics) or draw random numbers
            why = "the graph writes or draws"
        counts = size_rules.counted(self.graph, self.dims)[0]
        if counts:  # the probes' sizes would split into other counts: other graphs
            why = f"the number of outputs of {counts[0][-1]} follows a dynamic size (guarded)"
        if why is not None:
            logs.log("recompiles", f"{self.name}: no size-generic program: {why}")
            self.generic = None
            return call(*tensors)
        traced = capture(call, tuple(tensors), root=root, strict=False)
        graphs = [self.graph, traced.graph]
        shapes = [t._shape for t in tensors]
        groups, self.fixed = sizes.moved(self.shapes, shapes, self.dims)
        try:
            for k in (1, 2):
                probe = sizes.probe_sizes(shapes, groups, k)
                args = [
                    t if p == t._shape else ember.zeros(p, dtype=t.dtype, device=t.device)
                    for t, p in zip(tensors, probe)
                ]
                graphs.append(capture(call, tuple(args), root=root, strict=False).graph)
        except Exception as exc:  # a probe the code rejects (a size it checks): no program
            found = f"a probe at other sizes failed ({type(exc).__name__}: {exc})"
        else:
            found = sizes.fit(graphs)
        if not isinstance(found, str):
            found = replay.build(
                self.graph, method=self.region.method, fuse=True,
                writer=functools.partial(replay_dynamic.GenericProgram, shapes=found),
                check=replay_dynamic.check(found),
            )  # fmt: skip
            if found is None:
                found = "the graph has control flow or records gradients"
        if isinstance(found, str):
            logs.log("recompiles", f"{self.name}: no size-generic program: {found}")
            found = None
        else:
            logs.log("recompiles", f"{self.name}: one size-generic program for every size")
        self.generic = found
        return traced.outputs if isinstance(traced.outputs, tuple) else (traced.outputs,)

    def __getattr__(self, name):  # the Region's fields (graph, compile_seconds...)
        return getattr(self.region, name)


def _records(graph) -> bool:
    """Whether the graph's outputs require grad (its replays go through the dispatcher)."""
    return any(getattr(v.type(), "requires_grad", lambda: None)() for v in graph.outputs())
