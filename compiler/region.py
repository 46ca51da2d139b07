"""One compiled region: capture a call into a graph, then replay the graph's generated code.

The arguments are flattened (tuples, lists, dicts); tensors become graph inputs, anything else
is a Python constant the guards compare. The outputs are flattened the same way: tensors are
graph outputs, Python scalars and None are kept as they were returned, and the tuple subclasses
among the containers (a namedtuple, ``max``'s ``(values, indices)``, ``ember.Size``) are given
back to the rebuilt outputs, which pytree's JSON specs know only as tuples.
"""

from __future__ import annotations

import threading
import time
import warnings

from ember._tensor import Tensor
from ember.autograd.grad_mode import THREAD as GRAD
from ember.dispatcher.layers import STACK
from ember.jit import pytree
from ember.jit.codegen import generate
from ember.jit.symbolic import SymInt
from ember.jit.tracer import CAPTURE_LOCK, TracerWarning, capture, current

from . import fusion_steps, joint, lower, overhead, replay
from .observer import Observer, watching
from .train_region import TrainRegion, no_op_region

_CONSTANT_OUTPUTS = (int, float, bool, str, type(None))
_UNBUILT = object()
_COMPILING = threading.local()


def is_compiling() -> bool:
    """Whether the calling code runs inside an ember.compile capture (PyTorch's
    ``torch.compiler.is_compiling``)."""
    return getattr(_COMPILING, "depth", 0) > 0


def compiling(step: int) -> None:
    """Enter (1) or leave (-1) code that ``is_compiling`` reports: a capture, or the Python of
    a call run as segments (the user's code runs as part of the compiled function)."""
    _COMPILING.depth = getattr(_COMPILING, "depth", 0) + step


class Region:
    """A captured graph and how to rebuild the user's outputs from its results."""

    def __init__(
        self, graph, fn, out_leaves: list, out_spec: dict, seconds: float, method=False, kinds=None
    ):
        self.graph = graph
        self.kinds = kinds  # the outputs' tuple subclasses (``container_kinds``), or None
        # a size among the outputs (``x.shape``): a constant of the capture's sizes, so the
        # sizes cannot be generic (frame.py specialises them)
        self.size_outputs = False
        self.method = method
        self.fn = fn  # generated: fn(root, *tensors) or fn(*tensors)
        self.positions = [i for i, leaf in enumerate(out_leaves) if isinstance(leaf, Tensor)]
        self.out_leaves = [None if isinstance(leaf, Tensor) else leaf for leaf in out_leaves]
        self.out_spec = out_spec
        self.compile_seconds = seconds
        self.fast = _UNBUILT  # replay.build's program, made at the first replay
        self.joint = _UNBUILT  # joint.build's pair, made at the first replay that records grad
        self.static = False  # mode="reduce-overhead": the program writes preallocated buffers
        # the common outputs rebuilt without the general unflatten: one tensor, a tuple of them
        self.single = out_spec == pytree.LEAF and self.positions == [0]
        self.flat_tuple = out_spec == {
            "type": "tuple",
            "children": [pytree.LEAF] * len(out_leaves),
        } and len(self.positions) == len(out_leaves)

    def run(self, root, tensors):
        fast = self.fast
        if fast is _UNBUILT:
            fast = self.fast = self.program(root)
        flat = None
        if fast is not None and STACK.grad_only_layers is STACK.layers:
            flat = fast(root, *tensors) if root is not None else fast(*tensors)
        elif fast is None and GRAD.mode.enabled and STACK.grad_only_layers is STACK.layers:
            flat = self.train(root, tensors)  # (without grad mode there is nothing to record)
        if flat is None:  # a layer to run (autocast, profiler...) or a gradient to record
            flat = self.fn(root, *tensors) if root is not None else self.fn(*tensors)
        return self.rebuild(flat)

    def rebuild(self, flat):
        """The user's outputs from the graph's."""
        if self.single:
            return flat[0]
        if self.flat_tuple and self.kinds is None:
            return flat
        leaves = list(self.out_leaves)
        for position, value in zip(self.positions, flat):
            leaves[position] = value
        out = pytree.unflatten(leaves, self.out_spec)
        return out if self.kinds is None else with_kinds(out, self.kinds)

    def train(self, root, tensors):
        """The outputs through the compiled forward/backward pair, or None."""
        pair = self.joint
        if pair is _UNBUILT:
            pair = self.joint = joint.build(self, root, tensors, static=self.static)
        return None if pair is None else pair.run(root, tensors)

    def program(self, root=None):
        """The dispatch-free program, or None when the graph records gradients (its outputs
        require grad) or has control flow."""
        outputs = self.graph.outputs()
        if any(getattr(v.type(), "requires_grad", lambda: None)() for v in outputs):
            return None
        if self.static:
            return overhead.plans(self.graph, self.method)
        graph = replayed_graph(self.graph)
        return replay.build(graph, method=self.method, fuse=True, root=root)


def replayed_graph(graph):
    """The graph a no-grad replay runs: composites as their ops, so fusion crosses their
    edges (lower.inlined), but for those a fused kernel takes whole (mean, softmax)."""
    return lower.inlined(graph, _kept)


def _kept(op, node) -> bool:
    return replay.runs_itself(op, node) or isinstance(fusion_steps.step_of(node), tuple)


def container_kinds(tree):
    """The tuple subclasses among ``tree``'s containers, as ``(type, children's kinds)``
    (children a list, or a dict for a dict), or None when every container is a plain tuple,
    list or dict."""
    kind = type(tree)
    if kind is dict:
        children = {k: container_kinds(v) for k, v in tree.items()}
        return (dict, children) if any(c is not None for c in children.values()) else None
    if isinstance(tree, (tuple, list)):
        children = [container_kinds(v) for v in tree]
        if kind in (tuple, list) and all(c is None for c in children):
            return None
        return (kind, children)
    return None


def with_kinds(tree, kinds):
    """``tree`` (rebuilt with plain containers) with the subclasses ``container_kinds`` saw."""
    if kinds is None:
        return tree
    kind, children = kinds
    if kind is dict:
        return {k: with_kinds(v, children[k]) for k, v in tree.items()}
    items = [with_kinds(v, c) for v, c in zip(tree, children)]
    return _rebuilt(kind, items)


def _rebuilt(kind, items: list):
    """A container of type ``kind`` (a list, a tuple or a subclass of one) holding ``items``."""
    if kind is list or kind is tuple:
        return kind(items)
    make = getattr(kind, "_make", None)  # a namedtuple takes its fields positionally
    return make(items) if make is not None else kind(items)


def _plain_sizes(tree):
    """``tree`` with the trace's SymInts (``x.shape`` during a capture) as plain ints: they
    hold their trace, and the user gets what eager returns."""
    if isinstance(tree, SymInt):
        return int(tree)
    if type(tree) is dict:
        return {k: _plain_sizes(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return _rebuilt(type(tree), [_plain_sizes(v) for v in tree])
    return tree


def split(args: tuple, kwargs: dict):
    """``(leaves, spec, tensor positions)`` of a call's arguments."""
    leaves, spec = pytree.flatten((tuple(args), dict(kwargs)))
    return leaves, spec, [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]


def record(fn, args: tuple, kwargs: dict, root, observer: Observer):
    """Run ``fn(*args, **kwargs)`` once under the tracing layer.

    Returns ``(result, region)``: the call's (eager) result and the Region to replay it, or
    None for the region when the capture broke (the reasons are in ``observer``).
    """
    start = time.perf_counter()
    leaves, spec, positions = split(args, kwargs)
    held: dict = {}

    def user_call(*tensors):
        if all(t is leaves[p] for p, t in zip(positions, tensors)):
            # the caller's own containers: a dict or list argument the function fills (an
            # accumulator of losses) is the caller's, as in eager, not a rebuilt copy
            call_args, call_kwargs = args, kwargs
        else:
            full = list(leaves)
            for position, tensor in zip(positions, tensors):
                full[position] = tensor
            call_args, call_kwargs = pytree.unflatten(full, spec)
        observer.state = current()
        result = fn(*call_args, **call_kwargs)
        held["result"] = result
        observer.finish()
        observer.close_segment()
        out_leaves, out_spec = pytree.flatten(result)
        held["out"] = (out_leaves, out_spec)
        held["kinds"] = container_kinds(result)
        bad = [leaf for leaf in out_leaves if not isinstance(leaf, (Tensor, *_CONSTANT_OUTPUTS))]
        if bad and observer.active():
            observer.graph_break("output", type(bad[0]).__name__)
        targets = tuple(observer.targets)  # the loss of a training step: one more output
        if targets:
            held["out"] = pytree.flatten((result, list(targets)))
            held["kinds"] = container_kinds((result, list(targets)))
        return tuple(leaf for leaf in out_leaves if isinstance(leaf, Tensor)) + targets

    observer.entry_code = user_call.__code__
    compiling(1)
    try:
        with CAPTURE_LOCK, watching(observer), warnings.catch_warnings():
            # a trace's warnings about baked-in values are graph breaks here, reported as such
            warnings.simplefilter("ignore", TracerWarning)
            captured = capture(
                user_call, tuple(leaves[i] for i in positions), root=root, strict=False,
                observer=observer,
            )  # fmt: skip
    finally:
        compiling(-1)
    if any(isinstance(leaf, SymInt) for leaf in pytree.flatten(held.get("result"))[0]):
        held["result"] = _plain_sizes(held["result"])
    if observer.broken:
        return held["result"], None
    graph = captured.graph
    out_leaves, out_spec = held["out"]
    sized = any(isinstance(leaf, SymInt) for leaf in out_leaves)
    if sized:
        out_leaves = [int(leaf) if isinstance(leaf, SymInt) else leaf for leaf in out_leaves]
    trained = observer.targets or observer.before or observer.after
    if trained and not observer.op_count():  # optimizer calls alone: no forward to replay
        region = no_op_region(observer, out_leaves, out_spec)
        if region is None:
            observer.graph_break("optimizer.step")
        return held["result"], region
    if observer.ops_after_backward:
        observer.graph_break("backward", stack=observer.tail_stack)
        if observer.broken:
            return held["result"], None
    _name_inputs(graph, leaves, spec, positions, fn)
    generated = generate(graph, "compiled", method=root is not None)
    seconds = time.perf_counter() - start
    method = root is not None
    region = Region(graph, generated.fn, out_leaves, out_spec, seconds, method, held["kinds"])
    region.size_outputs = sized
    if trained:
        region = TrainRegion(region, observer, out_leaves, out_spec)
    return held["result"], region


def _name_inputs(graph, leaves, spec, positions, fn) -> None:
    """Graph inputs named after the function's parameters (``x``, ``batch.0``)."""
    import inspect

    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    paths = pytree.leaf_paths(spec)
    for value, position in zip(graph.inputs(), positions):
        group, index, *rest = paths[position].split(".")
        if group == "0":
            i = int(index)
            index = params[i] if i < len(params) else f"input{i}"
        value.setDebugName("_".join([index, *rest]))
