"""ember's BatchNorm layers in scripted code, with the module's ``training`` read at run time.

A ``prim::If`` on the flag (``prim::ModuleAttr``, as for dropout) picks batch statistics with the
running-statistics update (``batch_norm_training`` below, in the TorchScript subset and compiled by
this compiler) or the eval-mode ``x * scale + shift`` over the running statistics. Without running
statistics (``track_running_stats=False``) the batch statistics are used in both modes, as in
PyTorch. The update follows ``torch.nn.modules.batchnorm._BatchNorm.forward``: the batch counter
always advances, and ``momentum=None`` means a cumulative average (factor 1 / batches seen).
"""

from __future__ import annotations

# ruff: noqa: UP006, UP045 - List/Optional: the TorchScript spelling of the sources below
from typing import List, Optional  # noqa: UP035

import ember
from ember import Tensor

from . import builtins as lib


def batch_norm_training(
    x,
    running_mean: Optional[Tensor],
    running_var: Optional[Tensor],
    batches: Optional[Tensor],
    weight: Optional[Tensor],
    bias: Optional[Tensor],
    momentum: float,
    cumulative: bool,
    eps: float,
):
    dims: List[int] = [0]
    shape: List[int] = [1, x.size(1)]
    for d in range(2, x.dim()):
        dims.append(d)
        shape.append(1)
    count = x.numel() // x.size(1)
    mean = x.mean(dims)
    var = x.var(dims, correction=0)
    if running_mean is not None and running_var is not None and batches is not None:
        batches.add_(1)
        factor = momentum
        if cumulative:
            factor = 1.0 / float(batches.item())
        running_mean.lerp_(mean.detach(), factor)
        running_var.lerp_(var.detach() * (count / (count - 1)), factor)
    scale = ember.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    return x * scale.view(shape) + shift.view(shape)


def _eval_nodes(em, ref, x, attr):
    """Eval-mode batch norm as ``x * scale + shift`` over the channel dim (dim 1): the input is
    viewed channels-last with ``transpose(1, -1)``, which is the identity for (N, C)."""
    m = ref.module
    var = em.call_op("add", [attr("running_var"), em.constant(float(m.eps))], {})
    scale = em.call_op("rsqrt", [var], {})
    if m.affine:
        scale = em.call_op("mul", [scale, attr("weight")], {})
    shift = em.call_op("neg", [em.call_op("mul", [attr("running_mean"), scale], {})], {})
    if m.affine:
        shift = em.call_op("add", [shift, attr("bias")], {})
    last = [em.constant(1), em.constant(-1)]
    moved = em.call_op("transpose", [x, *last], {})
    out = em.call_op("add", [em.call_op("mul", [moved, scale], {}), shift], {})
    return em.call_op("transpose", [out, *last], {})


def _training_nodes(em, ref, x, attr):
    m = ref.module
    tracked = m.track_running_stats
    state = [attr(n) if tracked else em.constant(None) for n in _STATE]
    params = [attr(n) if m.affine else em.constant(None) for n in ("weight", "bias")]
    extra = {
        "momentum": em.constant(0.0 if m.momentum is None else float(m.momentum)),
        "cumulative": em.constant(m.momentum is None),
        "eps": em.constant(float(m.eps)),
    }
    return em.unit.call_function(em, batch_norm_training, [x, *state, *params], extra, em.current)


_STATE = ("running_mean", "running_var", "num_batches_tracked")


def lower(em, ref, args, kwargs):
    if len(args) != 1 or kwargs:
        raise lib.BindError(f"{type(ref.module).__name__}.forward() expected one input")
    x = args[0]

    def attr(name):
        return em.module_attribute(ref, name, em.current)

    if not ref.module.track_running_stats:
        return _training_nodes(em, ref, x, attr)
    training = em.read_attribute(ref, "training", None)
    node = em.graph.insert("prim::If", [training], num_outputs=0)
    for build in (_training_nodes, _eval_nodes):
        block = node.addBlock()
        with em.graph.insert_point_guard(block):
            block.registerOutput(em.materialize(build(em, ref, x, attr)))
    return node.addOutput(x.type())
