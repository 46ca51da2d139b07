"""nll_loss's forward and backward as PyTorch's aten rows (issue 20): ``nll_loss_forward``
(the loss and ``total_weight``) and ``nll_loss_backward`` (the gradient scatter), each one
kernel call where the backend has one (the CPU's loss.c), each with its own formula
(autograd/loss_formulas.py: one NllLossBackward0 node, and nll_loss_backward differentiable
for double backward). Their decompositions (nn/functional/_nll.py) are the composite the
``nll_loss`` row ran before, for every other device. ``reduction``: at::Reduction's ints.
"""

from __future__ import annotations

import numpy as np

from ..kinds import functional as functional_run
from ..kinds import loss as run
from ..opdef import DTYPES_FLOAT, Kind, OpDef


def _counted(x, target, weight, ignore_index):
    """The (N, C, ...) input, the safe targets and their weights (0 where ignored)."""
    x, target = (x[None], target[None]) if x.ndim == 1 else (x, target)
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    weights = valid.astype(x.dtype) * (1.0 if weight is None else weight[safe])
    return x, safe, weights.astype(x.dtype)


def _np_nll_loss_forward(x, target, weight=None, reduction=1, ignore_index=-100):
    batched, safe, weights = _counted(x, target, weight, ignore_index)
    loss = -np.take_along_axis(batched, safe[:, None], 1)[:, 0] * weights
    total = weights.sum(dtype=np.float64)
    if reduction == 0:  # total_weight 0, but an unbatched call's own weight (PyTorch's)
        return loss.reshape(target.shape), np.asarray(total if x.ndim == 1 else 0, x.dtype)
    summed = loss.sum(dtype=np.float64)
    out = summed / total if reduction == 1 else summed
    return np.asarray(out, x.dtype), np.asarray(total, x.dtype)


def _np_nll_loss_backward(grad, x, target, weight, reduction, ignore_index, total_weight):
    batched, safe, weights = _counted(x, target, weight, ignore_index)
    scale = (
        grad.reshape(weights.shape)
        if reduction == 0
        else grad / (total_weight if reduction == 1 else 1)
    )
    out = np.zeros_like(batched)
    np.put_along_axis(out, safe[:, None], (-weights * scale)[:, None].astype(x.dtype), 1)
    return out.reshape(x.shape)


def _row(schema: str, reference, runner, kernel_args: str, notes: str) -> OpDef:
    """One of the pair: a float row, its decomposition in nn/functional/_nll.py, reached
    through ember.ops (nll_loss and the formulas call it), no out=."""
    name = schema.split("(", 1)[0]
    return OpDef(
        schema,
        Kind.NN,
        reference,
        dtypes=DTYPES_FLOAT,
        decomposition=functional_run.from_nn("_nll", f"_{name}"),
        runner=runner,
        function=False,
        method=False,
        out=None,
        samples=name,
        kernel_args=kernel_args,
        notes=notes,
    )


ROWS = [
    _row(
        "nll_loss_forward(Tensor input, Tensor target, Tensor? weight, int reduction, "
        "int ignore_index) -> (Tensor output, Tensor total_weight)",
        _np_nll_loss_forward,
        run.nll_loss_forward,
        "(output, total_weight, input, target, weight, (n, c, inner), reduction, "
        "ignore_index): input contiguous (n, c, inner), target contiguous int64 (n, inner), "
        "weight c elements or None; IndexError for a target out of range",
        "nll_loss's and nll_loss2d's forward (any trailing dims)",
    ),
    _row(
        "nll_loss_backward(Tensor grad_output, Tensor input, Tensor target, Tensor? weight, "
        "int reduction, int ignore_index, Tensor total_weight) -> Tensor",
        _np_nll_loss_backward,
        run.nll_loss_backward,
        "(grad_input, grad_output, target, weight, total_weight, (n, c, inner), reduction, "
        "ignore_index): as nll_loss_forward's; grad_input fresh, zeroed by the kernel",
        "nll_loss's input gradient: -weight[target] * grad at each target",
    ),
]
