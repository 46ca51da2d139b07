"""The size-generic forward/backward pair: one joint pair for every size of a dynamic region.

A dynamic region (dynamic.py) called with gradients at sizes other than its captured ones
used to run its dispatching code, autograd recording each op. As PyTorch's AOTAutograd traces
its joint graph with symbolic sizes after automatic dynamic, the pair is built once for every
size here: joint.py's joint graph is traced at the call's sizes, at the captured ones and at
two probes of zeros (sizes.py: each group of dims that moved together by its own offset), the
four graphs are fitted (``sizes.fit``: each value's shape an expression of the dynamic sizes),
and the partition's two programs are replay_dynamic.py's generic programs: buffers sized per
call, fused kernels that take the sizes per call, the saved values' shapes symbolic. The
forward program reads the sizes from the call's inputs; the backward from the saved values and
the incoming gradients that carry each symbol.

A node the size rules do not trust (size_rules.py: a slice, an op they do not know) is
checked in the forward: where its shape differs from the fit, the forward program declines and
that call runs the dispatching code (before any autograd node is made, so nothing is recorded
twice). The backward's shapes follow from the forward's at every call the forward served.
"""

from __future__ import annotations

import functools

import ember
from ember.autograd.grad_mode import no_grad

from . import joint, logs, pair_node, replay, replay_dynamic, sizes
from .joint import Joint

_STEPS = 2  # probes besides the call's sizes and the captured ones


class GenericJoint(Joint):
    """joint.Joint whose programs serve every size (``fixed``: the dynamic dims that did not
    move before the build keep their sizes, as dynamic.DynamicRegion's)."""

    __slots__ = ("fixed",)

    def serves(self, tensors) -> bool:
        return all(tensors[k]._shape[d] == n for k, d, n in self.fixed)

    def run(self, root, tensors):
        read = self.arguments(root)
        if read is None:
            return None
        with no_grad():
            flat = self.forward(*tensors, *read)
        if flat is None:  # a checked node's shape differs from the fit: the dispatching code
            return None
        args = (*tensors, *read, *self.closed)
        if self.direct and pair_node.plain(args):
            return pair_node.run(self, args, len(tensors), flat)
        return joint._Step.apply(self, len(tensors), flat, *args)


def build(region, root, tensors, captured: list, dims: dict, name: str = ""):
    """The generic pair of ``region`` (a DynamicRegion's, captured at ``captured`` shapes with
    dynamic ``dims``: ``{tensor index: dims}``) from the call with ``tensors``, or None with
    the reason in the ``recompiles`` log."""
    found = _build(region, root, tensors, captured, dims)
    if isinstance(found, str):
        logs.log("recompiles", f"{name}: no size-generic forward/backward pair: {found}")
        return None
    logs.log("recompiles", f"{name}: one size-generic forward/backward pair for every size")
    return found


def _build(region, root, tensors, captured, dims):
    graph = region.graph
    if any(node.blocks() for node in graph.block().nodes()):
        return "control flow"
    shapes = [t._shape for t in tensors]
    groups, fixed = sizes.moved(captured, shapes, dims)
    if not groups:
        return "no dynamic size moved"
    constants = joint._tensor_constants(graph)
    closed = list({id(t): t for t in constants if t._requires_grad}.values())
    points = [shapes, list(captured)] + [
        sizes.probe_sizes(shapes, groups, k) for k in range(1, _STEPS + 1)
    ]
    traces = []
    try:
        with joint._restored(root, constants):
            for point in points:
                args = [_at(t, p) for t, p in zip(tensors, point)]
                traces.append(
                    joint._trace(region, root, args, closed, _output_sizes(region, root, args))
                )
    except Exception as error:  # a probe the code rejects (a size it checks): no pair
        return f"a trace at other sizes failed ({type(error).__name__}: {error})"
    graph, forward_nodes, present, wanted, params, diff, n_out, made = traces[0]
    known = {id(v) for v in made}
    if any(id(v) not in known for v in joint._tensor_constants(graph)):
        return "a backward formula reads a tensor the trace cannot recompute"
    if not all(present):
        return "an input or parameter gets no gradient"
    fitted = sizes.fit([t[0] for t in traces])
    if isinstance(fitted, str):
        return fitted
    programs = functools.partial(_programs, shapes=fitted)
    pair = joint._partition(
        graph, forward_nodes, wanted, params, diff, n_out, closed, False, programs
    )
    if pair is None:
        return "the pair could not be built (EMBER_LOGS=graphs says why)"
    generic = GenericJoint.__new__(GenericJoint)
    for slot in Joint.__slots__:
        setattr(generic, slot, getattr(pair, slot))
    generic.fixed = fixed
    return generic


def _at(t, shape):
    """``t`` itself at its own shape, else zeros of ``shape`` like it (a probe)."""
    if shape == t._shape:
        return t
    return ember.zeros(shape, dtype=t.dtype, device=t.device).requires_grad_(t._requires_grad)


def _output_sizes(region, root, tensors) -> list:
    """The region's outputs' sizes at the tensors' sizes (the seeds of the joint trace)."""
    with no_grad():
        flat = region.fn(root, *tensors) if root is not None else region.fn(*tensors)
    return [tuple(t._shape) for t in flat]


def _programs(graph, forward, backward, shapes):
    """joint._partition's ``programs``: the forward and backward as generic programs, or why
    not. Each program reads every symbol from one of its own inputs."""
    built = []
    for inputs, nodes, outputs, name, _n_out in (forward, backward):
        local = _local(shapes, list(graph.inputs()), inputs)
        if isinstance(local, str):
            return f"the {name} program: {local}"
        writer = functools.partial(replay_dynamic.GenericProgram, shapes=local)
        check = replay_dynamic.check(local)
        built.append(
            replay.build(
                graph, inputs, nodes, outputs, name=name, fuse=True, writer=writer, check=check
            )
        )
    if None in built:
        return "control flow"
    return tuple(built)


def _local(shapes, graph_inputs: list, inputs: list):
    """``shapes`` with each symbol read from one of a program's ``inputs``: the first input
    dim the fit gave that symbol alone (the joint graph's inputs are not the backward's)."""
    symbols = []
    for k in range(len(shapes.symbols)):
        symbol = f"_s{k}"
        at = next(
            (
                (i, d)
                for i, v in enumerate(inputs)
                for d, n in enumerate(shapes.of(v) or ())
                if n == symbol
            ),
            None,
        )
        if at is None:
            return f"no input carries the size {symbol}"
        symbols.append(at)
    return sizes.Shapes(symbols, shapes.shapes, shapes.numbers, shapes.constants)
