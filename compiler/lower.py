"""Composite nodes lowered to the primitive ops of their decomposition, for the replay.

A composite (``linear`` is ``addmm``, itself ``mm`` and ``add``) costs a Python call per level
of its decomposition on each eager call. Its decomposition is traced once, on tensors of the
node's (guarded) types, with every composite expanded; the replay then runs that flat
sub-program. A decomposition that reads its inputs' values (a trace warning), draws random
numbers or writes into an argument is left to its runner.

A region that records no gradient goes further (``inlined``): its composites' decompositions
replace them in the graph itself, so fusion sees across their edges: a linear layer's bias
add and the activation after it are one fused kernel, as in a training pair's forward (whose
trace expands composites as it records).
"""

from __future__ import annotations

import warnings

import ember
from ember.autograd.grad_mode import no_grad
from ember.dispatcher.kinds.functional import runs_decomposition
from ember.jit.graph_utils import copy_node
from ember.jit.ops import has_side_effects, resolve
from ember.jit.tracer import TracerWarning, capture
from ember.jit.types import TensorType

_CACHE: dict = {}  # (kind, argument types and constants) -> sub-program or None
_GRAPHS: dict = {}  # (kind, argument types and constants) -> decomposition graph or None


def lowered(op, node, build, cache: bool = True, fuse: bool = False):
    """The sub-program ``fn(*tensor inputs) -> tuple`` for composite ``node``, or None.

    ``build(graph, fuse=fuse)``: replay.build, passed in (replay imports this module).
    ``cache``: share the sub-program between nodes of the same types (not when it owns its
    output buffers, as reduce-overhead's do). ``fuse``: its chains as fused kernels (a
    cross-entropy's log_softmax and loss in one)."""
    specs = arguments(op, node)
    return None if specs is None else of_types(op, specs, build, cache, fuse)


def arguments(op, node):
    """Per input of ``node``: ``(dtype, sizes, device)`` for a tensor, ``("=", value)`` for a
    constant; None when ``op`` is not lowered or an input is neither."""
    if op.mutates or not runs_decomposition(op):
        return None
    specs = []
    for value in node.inputs():
        typ = value.type()
        if isinstance(typ, TensorType):
            if not typ.is_complete():
                return None
            specs.append((typ.dtype(), tuple(typ.sizes()), typ.device()))
        elif value.node().kind() == "prim::Constant":
            specs.append(("=", value.node()["value"]))
        else:
            return None
    return specs


def _key(op, specs) -> tuple:
    return op.name, tuple((s[0], repr(s[1])) if s[0] == "=" else s for s in specs)


def of_types(op, specs, build, cache: bool = True, fuse: bool = False):
    """``lowered``'s sub-program for inputs of these ``arguments`` (a size-generic program
    asks again for each call's sizes: replay_dynamic.py)."""
    key = (*_key(op, specs), fuse)
    if not cache:
        return _trace(op, specs, build, fuse)
    if key not in _CACHE:
        _CACHE[key] = _trace(op, specs, build, fuse)
    return _CACHE[key]


def _trace(op, specs, build, fuse):
    graph = decomposition(op, specs)
    return None if graph is None else build(graph, fuse=fuse)


def decomposition(op, specs):
    """``graph_of``, traced once per argument types (a sub-program, an inlined node and
    overhead.py's alias walk read the same graph; none of them changes it)."""
    key = _key(op, specs)
    if key not in _GRAPHS:
        _GRAPHS[key] = graph_of(op, specs)
    return _GRAPHS[key]


def graph_of(op, specs):
    """``op``'s decomposition traced on zeros of these ``arguments``, every composite
    expanded, or None (a trace warning, side effects, control flow)."""
    tensors = []
    args = []
    for spec in specs:
        if spec[0] == "=":
            args.append(spec[1])
        else:
            tensor = ember.zeros(spec[1], dtype=spec[0], device=spec[2])
            tensors.append(tensor)
            args.append(tensor)

    def body(*ts):
        it = iter(ts)
        call = [next(it) if isinstance(a, ember.Tensor) else a for a in args]
        return op.decomposition(*call)

    try:
        with warnings.catch_warnings(), no_grad():
            warnings.simplefilter("error", TracerWarning)
            graph = capture(body, tuple(tensors), strict=False, expand=expand).graph
    except Exception:  # any failure leaves the node to its runner
        return None
    if any(has_side_effects(n) or n.blocks() for n in graph.block().nodes()):
        return None
    if set(graph.outputs()) & set(graph.inputs()):
        return None  # returned as is for the zeros' layout (``contiguous``): strides decide
    return graph


def inlined(graph, keeps):
    """A copy of ``graph`` with every composite node that lowers replaced by the nodes of its
    decomposition (traced once per argument types), or ``graph`` itself when none does.
    ``keeps(op, node)``: nodes the caller runs otherwise (replay's direct kernels). Only for
    a program of the captured sizes: a decomposition's sizes are baked in."""
    copied = None
    for node in list(graph.block().nodes()):
        kind = node.kind()
        op = None if kind.startswith("prim::") else resolve(kind)
        specs = None if op is None or keeps(op, node) else arguments(op, node)
        if specs is None:
            continue
        sub = decomposition(op, specs)
        if sub is None:
            continue
        if copied is None:  # the first node that lowers: work on a copy from here on
            copied = graph.copy()  # the same nodes in the same order
            at = dict(zip(graph.block().nodes(), copied.block().nodes()))
        _splice(at[node], sub)
    return graph if copied is None else copied


def _splice(node, sub) -> None:
    """Replace ``node`` by a copy of the nodes of ``sub``, its tensor inputs in order."""
    tensors = [v for v in node.inputs() if isinstance(v.type(), TensorType)]
    mapping = dict(zip(sub.inputs(), tensors))
    graph = node.owningGraph()
    for inner in sub.block().nodes():
        copy_node(inner, graph, mapping).insertBefore(node)
    for value, result in zip(node.outputs(), sub.outputs()):
        value.replaceAllUsesWith(mapping[result])
    node.destroy()


def expand(op) -> bool:
    """Whether a trace records ``op`` as the ops of its decomposition (it runs it anyway)."""
    return not op.mutates and runs_decomposition(op)
