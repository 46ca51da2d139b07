"""nll_loss as ATen structures it (aten/src/ATen/native/LossNLL.cpp): ``nll_loss_forward``
gives the loss and ``total_weight`` (the summed class weight of the targets that count), and
``nll_loss_backward`` scatters the gradient back to the targets' places. Both are rows with a
CPU kernel (dispatcher/kinds/loss.py); these are their decompositions, which every other device
runs (and the compiler and the transforms see), and the ``nll_loss`` row that calls the
forward. Reductions are PyTorch's at::Reduction ints in the two rows, names in ``nll_loss``.
"""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _invalid(reduction):
    return ValueError(f"{reduction} is not a valid value for reduction")


def _nll_loss(input, target, weight=None, reduction="mean", ignore_index=-100):
    """The ``nll_loss`` row: its forward's loss (the node, NllLossBackward0, is the forward's)."""
    code = REDUCTIONS.get(reduction) if isinstance(reduction, str) else None
    if code is None:
        raise _invalid(reduction)
    if weight is not None and weight.requires_grad and ember.is_grad_enabled():
        # PyTorch refuses a gradient for the weights; ember's composite has always given one
        # (and its double backward): its parts are recorded instead of the forward's one node
        return _nll_loss_forward(input, target, weight, code, ignore_index)[0]
    return OPS["nll_loss_forward"](input, target, weight, code, ignore_index)[0]


def _batched(input, target):
    """Unbatched (C,) input and () target as a batch of one, and whether to undo it."""
    if input.ndim == 1:
        return input.unsqueeze(0), target.unsqueeze(0), True
    return input, target, False


def _counted(name, logp, target, weight, ignore_index):
    """``(safe, weights)`` per target: its index with ``ignore_index`` replaced by 0, and its
    class weight (1 without ``weight``), 0 where the target is ``ignore_index``."""
    if target.dtype.is_floating_point:
        raise RuntimeError(
            f"{name}: expected target of integer type (class indices), got {target.dtype.name}"
        )
    expected = (logp.shape[0],) + tuple(logp.shape[2:])
    if tuple(target.shape) != expected:
        raise ValueError(
            f"{name}: Expected target size {list(expected)}, got {list(target.shape)} (input of "
            f"shape {list(logp.shape)})"
        )
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0)
    weights = valid.to(logp.dtype)
    if weight is not None:
        weights = weights * weight[safe]
    return safe, weights


def _picked(name, logp, target, weight, ignore_index):
    """``(-logp[target] * w, w)`` per target, ``w`` as ``_counted`` gives it."""
    safe, weights = _counted(name, logp, target, weight, ignore_index)
    picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    return -picked * weights, weights


def _nll_loss_forward(input, target, weight=None, reduction=1, ignore_index=-100):
    if input.ndim < 1:
        raise ValueError("nll_loss: input must have at least 1 dimension")
    x, t, unbatched = _batched(input, target)
    loss, weights = _picked("nll_loss", x, t, weight, ignore_index)
    if reduction == 1:
        total = weights.sum()
        return loss.sum() / total, total
    if reduction == 2:
        return loss.sum(), weights.sum()
    if reduction == 0:  # PyTorch's total_weight: 0, but an unbatched call's own weight
        if unbatched:
            return loss.squeeze(0), weights.sum()
        return loss, ember.zeros((), dtype=loss.dtype, device=loss.device)
    raise _invalid(reduction)


def _nll_loss_backward(grad_output, input, target, weight, reduction, ignore_index, total_weight):
    """``-w[t] * grad`` (over ``total_weight`` for the mean) at each target, 0 elsewhere."""
    x, t, unbatched = _batched(input, target)
    safe, weights = _counted("nll_loss_backward", x, t, weight, ignore_index)
    if reduction == 0:
        grad = grad_output.unsqueeze(0) if unbatched else grad_output
    elif reduction in (1, 2):
        grad = grad_output / total_weight if reduction == 1 else grad_output
    else:
        raise _invalid(reduction)
    # ignored targets get nothing (0 * inf would be NaN where every target is ignored)
    picked = (-(weights * grad)).masked_fill(t == ignore_index, 0)
    out = ember.zeros_like(x).scatter(1, safe.unsqueeze(1), picked.unsqueeze(1))
    return out.squeeze(0) if unbatched else out
