"""Training: a region's forward and backward compiled as one autograd node.

The backward formulas are ember ops, so the tracing layer records them: the region's forward
is traced once more followed by ``autograd.grad`` of its outputs, on detached copies of the
call's tensors, giving one joint graph (forward ops, then backward ops). The partition: the
forward program is the nodes recorded before ``grad`` was called, and it returns the outputs
plus what the backward reads of them (saved); everything after runs in the backward program,
including the formulas' elementwise work on saved values that needs no incoming gradient
(recomputed in the backward rather than saved). Both programs are replay.build's, and they run
as one ``autograd.Function`` node, so per call autograd records one node instead of one per op.

Module buffers, tensors the function closes over and the random generators are restored after
the tracing run, so the call that builds the pair updates running statistics (or a closure's
state) and draws random numbers once, like eager.

Tensors the function closes over that require grad (a global model's parameters, as in a
compiled training step, train_region.py) are differentiated like the module's parameters: the
programs read them as constants (held by reference, so an optimizer's in-place update is seen),
and they are inputs of the autograd node, so their gradients accumulate in ``.grad``.

Left to the dispatching replay (``build`` returns None): graphs with control flow, a trace that
fails.
Double backward (``create_graph=True``) through the node raises.
"""

from __future__ import annotations

import math

import ember
from ember import _factories as factories
from ember import _random
from ember._tensor import Tensor
from ember.autograd.function import Function
from ember.autograd.grad_mode import no_grad
from ember.autograd.graph import saved_tensors_hooks
from ember.autograd.node import SavedTensor
from ember.jit.ops import mutates
from ember.jit.passes.transposes import fold_double_transposes
from ember.jit.tracer import capture, current
from ember.jit.types import TensorType

from . import logs, overhead, pair_node, partition, replay
from .lower import expand


class Joint:
    """The compiled forward/backward pair of a region (see the module docstring)."""

    __slots__ = (
        "backward",
        "closed",
        "diff",
        "direct",
        "forward",
        "frozen",
        "inputs_grad",
        "n_out",
        "params",
        "read",
        "saved_bytes",
    )

    def __init__(
        self, forward, backward, params, frozen, inputs_grad, diff, n_out, saved, closed, direct
    ):
        self.forward = forward  # fn(*inputs, *params, *frozen) -> (*outputs, *saved)
        self.backward = backward  # fn(*saved, *grads of differentiable outputs) -> grads
        self.params = [name.split(".") for name in params]  # the parameters it differentiates
        self.frozen = [name.split(".") for name in frozen]  # tensors read without gradient
        self.inputs_grad = inputs_grad  # positions of the inputs it differentiates
        self.diff = diff  # positions of the outputs that require grad
        self.n_out = n_out
        self.saved_bytes = saved
        self.closed = closed  # tensors closed over that it differentiates (constants)
        self.read = None  # fn(root): the parameters, then the frozen tensors (replay.reader)
        # no output is one of the call's tensors as it came in: a call without vmap or forward
        # AD records pair_node's node (else _Step, which gives such an output its identity)
        self.direct = direct

    def run(self, root, tensors):
        """The call's outputs, or None when a tensor read without gradient now requires one
        (the dispatching replay records it)."""
        read = self.arguments(root)
        if read is None:
            return None
        args = (*tensors, *read, *self.closed)
        if self.direct and pair_node.plain(args):
            return pair_node.run(self, args, len(tensors))
        return _Step.apply(self, len(tensors), None, *args)

    def arguments(self, root):
        """The module tensors the forward program takes (parameters, then frozen ones), or
        None when a frozen one now requires grad."""
        if self.read is None:
            self.read = replay.reader(root, [".".join(p) for p in self.params + self.frozen])
        found = self.read(root)
        if any(t._requires_grad for t in found[len(self.params) :]):
            return None
        return found


class _Step(Function):
    @staticmethod
    def forward(ctx, joint, n, ready, *tensors):
        # ready: the forward program's results when the caller ran it already (a size-generic
        # forward may decline a call, joint_dynamic.py, which must happen before the node)
        flat = ready or joint.forward(*tensors[: len(tensors) - len(joint.closed)])
        ctx.joint = joint
        ctx.saved = flat[joint.n_out :]
        ctx.n = n
        outputs = flat[: joint.n_out]
        diff = set(joint.diff)
        ctx.mark_non_differentiable(*[t for i, t in enumerate(outputs) if i not in diff])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        seeds = [grads[i] for i in ctx.joint.diff]
        return (None, None, None, *pair_node.gradients(ctx.joint, ctx.saved, seeds, ctx.n))


def build(region, root, tensors, static: bool = False) -> Joint | None:
    """The pair for ``region`` called with ``tensors`` (the call that asks for it), or None."""
    graph = region.graph
    if any(node.blocks() for node in graph.block().nodes()):
        return _refuse("control flow")
    if _writes_an_input(graph):  # the tracing run below runs on the inputs' storage
        return _refuse("an in-place op writes an input (the pair's tracing run would write it)")
    closed = [t for t in _tensor_constants(graph) if t._requires_grad]
    closed = list({id(t): t for t in closed}.values())
    try:
        with _restored(root, _tensor_constants(graph)):
            traced = _trace(region, root, tensors, closed)
    except Exception as error:  # any failure leaves the region to the dispatching replay
        return _refuse(f"{type(error).__name__}: {error}")
    graph, forward_nodes, present, wanted, params, diff, n_out, constants = traced
    known = {id(v) for v in constants}
    if any(id(v) not in known for v in _tensor_constants(graph)):
        # a tensor made where the tracer did not see it (inside a kernel's runner), baked in
        return _refuse("a backward formula reads a tensor the trace cannot recompute")
    if not all(present):
        return _refuse("an input or parameter gets no gradient")
    return _partition(graph, forward_nodes, wanted, params, diff, n_out, closed, static)


def _writes_an_input(graph) -> bool:
    """Whether an in-place node writes one of the graph's inputs (the tensors of the call; a
    module's buffers and the constants are put back after the tracing run by ``_restored``)."""
    inputs = set(graph.inputs())
    for node in graph.nodes():
        op = node.op()
        if op is not None and mutates(op) and node.inputs() and node.inputsAt(0) in inputs:
            return True
    return False


def _trace(region, root, tensors, closed, sizes=None):
    """The joint graph of ``region`` called with ``tensors``; ``sizes``: its outputs' sizes
    when they are not the captured graph's (joint_dynamic.py traces it at other sizes)."""
    inputs = [t.detach().requires_grad_(t._requires_grad) for t in tensors]
    wanted = [i for i, t in enumerate(tensors) if t._requires_grad]
    params = [v.node()["name"] for v in _read(region.graph) if v.type().requires_grad()]
    outs = [v.type() for v in region.graph.outputs()]
    diff = [i for i, typ in enumerate(outs) if typ.requires_grad()]
    sizes = sizes or [t.sizes() for t in outs]
    seeds = [
        ember.ones(n, dtype=t.dtype(), device=t.device())
        for t, n in zip(outs, sizes)
        if t.requires_grad()
    ]
    forward_nodes: set = set()
    present: list = []

    def joint(*flat):
        current().grad_mode = None  # a plain trace's: no grad-mode blocks recorded
        ins, grads = flat[: len(inputs)], flat[len(inputs) :]
        outputs = region.fn(root, *ins) if root is not None else region.fn(*ins)
        forward_nodes.update(current().graph.block().nodes())
        wrt = [ins[i] for i in wanted] + [_attribute(root, n.split(".")) for n in params]
        wrt += closed
        found = ember.autograd.grad([outputs[i] for i in diff], wrt, list(grads), allow_unused=True)
        present.extend(g is not None for g in found)
        return (*outputs, *[g for g in found if g is not None])

    with _tracing_backward() as made:
        # composites as their ops: their formulas save tensors made inside them (weight.t())
        captured = capture(
            joint, (*inputs, *seeds), root=root, strict=False, expand=expand, observer=_CLOSURE
        )
    constants = [*_tensor_constants(region.graph), *made.made]
    return captured.graph, forward_nodes, present, wanted, params, diff, len(outs), constants


def _partition(graph, forward_nodes, wanted, params, diff, n_out, closed, static, programs=None):
    """The Joint of a traced joint graph; ``programs(graph, forward, backward)``: the two
    programs from their ``(inputs, nodes, outputs, name, n_out)`` (default replay.build's)."""
    fold_double_transposes(graph)  # weight gradients transposed twice (passes/transposes.py)
    nodes = list(graph.block().nodes())
    reads = {v.node()["name"]: v for v in _read(graph)}
    frozen = [name for name, v in reads.items() if not v.type().requires_grad()]
    if sorted(params) != sorted(n for n in reads if n not in frozen):
        return _refuse("the parameters read changed")
    # the module's tensors are arguments of the forward program (read once per call)
    ahead = [n for n in nodes if n in forward_nodes and n.kind() != "prim::GetAttr"]
    after = [n for n in nodes if n not in forward_nodes]
    if any(n.kind() == "prim::GetAttr" for n in after):
        return _refuse("the backward reads a module tensor the forward did not")
    n_in = len(graph.inputs()) - len(diff)
    inputs, seeds = graph.inputs()[:n_in], graph.inputs()[n_in:]
    outputs, grads = graph.outputs()[:n_out], graph.outputs()[n_out:]
    taken = [reads[name] for name in params + frozen]
    defined = set(inputs) | set(taken) | {v for n in ahead for v in n.outputs()}
    constants = [n for n in ahead if n.kind() == "prim::Constant"]
    inline = {n.output() for n in constants}
    saved: list = []
    for value in [v for n in after for v in n.inputs()] + list(grads):
        if value in defined and value not in inline and value not in saved:
            saved.append(value)
    # cheap forward values recomputed by the backward where that saves bytes (partition.py)
    saved, recomputed = partition.choose(ahead, [*inputs, *taken], saved, inline, after)
    body = constants + partition.placed(recomputed, after)
    forward = ([*inputs, *taken], ahead, [*outputs, *saved], "compiled_forward", n_out)
    backward = ([*saved, *seeds], body, list(grads), "compiled_backward", 0)
    if programs is not None:  # size-generic programs (joint_dynamic.py)
        found = programs(graph, forward, backward)
        if isinstance(found, str):
            return _refuse(found)
        forward, backward = found
    elif static:  # mode="reduce-overhead": buffers (overhead.py)
        forward, backward = overhead.training(graph, forward, backward) or (None, None)
    else:
        forward, backward = (
            replay.build(graph, *p[:3], name=p[3], fuse=True) for p in (forward, backward)
        )
    if forward is None or backward is None:
        return _refuse("control flow")
    saved_bytes = _bytes(saved)
    passed = set(inputs) | set(taken)
    direct = not any(v in passed or v.node().kind() == "prim::Constant" for v in outputs)
    logs.log(
        "graphs",
        f"compiled backward: {len(after)} ops, {saved_bytes} bytes saved, "
        f"{len(recomputed)} forward ops recomputed",
    )
    return Joint(
        forward, backward, params, frozen, wanted, diff, n_out, saved_bytes, closed, direct
    )


class _Closure:
    """The trace's observer: tensors closed over that require grad are held by reference (the
    capture held them so); a read of a graph tensor's data fails the trace (build refuses)."""

    closure = True

    def read(self, name: str) -> None:
        raise RuntimeError(f"the trace reads a tensor's data ({name})")

    def module(self, module) -> None:
        pass


_CLOSURE = _Closure()


def _tensor_constants(graph) -> list:
    return [
        n["value"]
        for n in graph.block().nodes()
        if n.kind() == "prim::Constant" and isinstance(n["value"], Tensor)
    ]


class _tracing_backward:  # noqa: N801 - used like a function
    """For the tracing run only. Saved tensors unpacked as the very tensors saved (not as
    history-free aliases of an op's output), so the tracer knows each one's value (the backward
    it records needs no history on them: no create_graph). And the tensors that the constant
    factories make (``full((), 0.0)`` in a formula) listed in ``made``: the trace bakes them
    in, which is right for them alone."""

    def __init__(self):
        self.made: list = []

    def __enter__(self):
        self.hooks = saved_tensors_hooks(_same, _same)
        self.hooks.__enter__()
        self.alias = SavedTensor._as_output
        SavedTensor._as_output = _same_output
        self.finish = factories._finish  # where full, zeros, ones... end
        made = self.made

        def finish(*args):
            t = self.finish(*args)
            made.append(t)
            return t

        factories._finish = finish
        return self

    def __exit__(self, *exc):
        factories._finish = self.finish
        SavedTensor._as_output = self.alias
        self.hooks.__exit__(*exc)


def _same(t):
    return t


def _same_output(_saved, t, _owner):
    return t


def _read(graph) -> list:
    """The tensors the graph reads from its module (``prim::GetAttr``)."""
    return [
        n.output()
        for n in graph.block().nodes()
        if n.kind() == "prim::GetAttr" and isinstance(n.output().type(), TensorType)
    ]


def _attribute(root, path: list):
    for part in path:
        root = getattr(root, part)
    return root


def _bytes(values) -> int:
    total = 0
    for value in values:
        typ = value.type()
        if isinstance(typ, TensorType) and typ.is_complete():
            total += math.prod(typ.sizes()) * typ.dtype().itemsize
    return total


def _refuse(why: str):
    logs.log("graphs", f"no compiled backward ({why}): the region's ops record autograd")
    return None


class _restored:  # noqa: N801 - used like a function
    """Buffers, tensors the graph closes over (a function's state updated in place) and
    random generators as they were before the block."""

    def __init__(self, root, constants: list):
        self.root = root
        self.constants = constants

    def __enter__(self):
        with no_grad():
            buffers = list(self.root.buffers()) if self.root is not None else []
            self.buffers = [(b, b.clone()) for b in [*buffers, *self.constants]]
        generators = [_random.default_generator, *_random._DEVICE_GENERATORS.values()]
        self.states = [(g, g.get_state()) for g in generators]

    def __exit__(self, *exc):
        with no_grad():
            for buffer, saved in self.buffers:
                buffer.copy_(saved)
        for generator, state in self.states:
            generator.set_state(state)
