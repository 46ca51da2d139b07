"""The autograd node of a compiled forward/backward pair (joint.py), recorded directly.

``autograd.Function.apply`` serves any user Function: a vmap rule, forward-mode tangents, a ctx
with saved tensors, non-differentiable and dirty outputs, gradients fitted to each input. A
compiled pair needs none of that on a plain call (no BatchedTensor, no forward-AD level open):
its programs take and return exactly the tensors the trace saw. So the pair runs its forward
program with grad mode off, makes one ``PairNode`` whose edges are its tensors' gradient edges
and gives the differentiable outputs their history; the node's ``apply`` runs the backward
program. A training step of bench_compile's ``tiny`` MLP went from 1.94M to 1.79M instructions
(docs/compile.md, pair17). Other calls keep ``joint._Step``, a Function.

The node is PyTorch's ``CompiledFunctionBackward`` (its name in ``grad_fn``); like PyTorch's,
its saved values are freed by a backward without ``retain_graph``, and a second backward then
raises, and double backward (``create_graph=True``) through it raises.
"""

from __future__ import annotations

from ember import _factories as factories
from ember.autograd import forward_ad
from ember.autograd.anomaly import record_trace
from ember.autograd.function_vmap import batched_level
from ember.autograd.grad_mode import THREAD as GRAD
from ember.autograd.layer import _set_history
from ember.autograd.node import FREED, Node, gradient_edge


class PairNode(Node):
    """``saved``: the forward program's saved values (None once released); ``metas``: the
    differentiable outputs' ``(shape, dtype, device)``, for a gradient that never came."""

    __slots__ = ("joint", "metas", "n_inputs", "saved")

    def name(self) -> str:
        return "CompiledFunctionBackward"

    def release(self) -> None:
        self.released = True
        self.saved = None

    def apply(self, grads: list) -> tuple:
        if self.saved is None:
            raise RuntimeError(FREED)
        seeds = []
        for i, meta in zip(self.joint.diff, self.metas):
            g = grads[i]
            seeds.append(
                g if g is not None else factories.zeros(meta[0], dtype=meta[1], device=meta[2])
            )
        return gradients(self.joint, self.saved, seeds, self.n_inputs)


def gradients(joint, saved, seeds, n_inputs: int) -> tuple:
    """The backward program's gradients, one per tensor of the call (its ``n_inputs``
    tensors, the module tensors read, the tensors closed over), None where it gives none;
    both nodes' (this one's and ``joint._Step``'s) backward."""
    if GRAD.mode.enabled:
        raise RuntimeError(
            "ember.compile: double backward (create_graph=True) through a compiled region "
            "is not supported yet; run the model eagerly for higher-order gradients"
        )
    found = joint.backward(*saved, *seeds)
    if found is None:  # a size-generic backward whose shapes disagree with the forward's
        raise RuntimeError(
            "ember.compile: the size-generic backward program's shapes differ from its "
            "forward's (please report it; compile with dynamic=False to avoid it)"
        )
    inputs = [None] * n_inputs
    for position, g in zip(joint.inputs_grad, found):
        inputs[position] = g
    params = found[len(joint.inputs_grad) : len(found) - len(joint.closed)]
    closed = found[len(found) - len(joint.closed) :]
    return (*inputs, *params, *[None] * len(joint.frozen), *closed)


def plain(args) -> bool:
    """Whether a call with ``args`` may take the direct node: no forward-AD level open and no
    vmap-batched tensor (``Function.apply`` handles those)."""
    return not forward_ad.STATE.open and batched_level(args) is None


def run(joint, args: tuple, n_inputs: int, flat=None) -> tuple:
    """The pair's outputs for the call's ``args`` (its tensors, the module tensors it reads,
    the tensors it closes over), recorded as one node when grad mode is on and one of them
    requires grad. ``flat``: the forward program's results when the caller ran it already."""
    mode = GRAD.mode
    if flat is None:
        forward_args = args[: len(args) - len(joint.closed)]
        if mode.enabled:  # the program's dispatched ops must not record
            mode.enabled = False
            try:
                flat = joint.forward(*forward_args)
            finally:
                mode.enabled = True
        else:
            flat = joint.forward(*forward_args)
    outputs = flat[: joint.n_out]
    if not mode.enabled:
        return tuple(outputs)
    edges = tuple(map(gradient_edge, args))
    if not any(edges):
        return tuple(outputs)
    node = PairNode()
    node.fill(None, None, edges, None, joint.n_out)
    node.joint = joint
    node.n_inputs = n_inputs
    node.saved = flat[joint.n_out :]
    node.metas = [
        (t._shape, t._dtype, t._storage.device) for t in map(outputs.__getitem__, joint.diff)
    ]
    if mode.anomaly:
        record_trace(node)
    for i in joint.diff:
        _set_history(outputs[i], node, i)
    return tuple(outputs)
