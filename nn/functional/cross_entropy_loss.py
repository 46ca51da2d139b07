"""cross_entropy composed as PyTorch composes it (aten/src/ATen/native/LossNLL.cpp), so that its
graph is PyTorch's: class indices are NllLoss over LogSoftmax; probability targets and label
smoothing are log_softmax, mul, sum, neg and div, with the Scalar overloads PyTorch's C++ calls
(``MulBackward1``, ``DivBackward1``, ``AddBackward1``: one edge) where ember's Python operators
make the Tensor ones (an edge and a None)."""

from __future__ import annotations

import math

from ember.autograd.graph_names import present
from ember.dispatcher.optable import OPS

from .activation import log_softmax


def _scalar(out, name: str, input, other):
    """``out``, ``input`` combined with the number ``other``, shown as PyTorch's Scalar
    overload ``name`` (one edge, the number saved as ``_saved_other``)."""
    return present(out, name, input, saved={} if name == "AddBackward1" else {"other": other})


def _class_view(weight, ndim: int, class_dim: int):
    """Per-class weights shaped to broadcast over (N, C, d1, ...) (as they are for a 1-D input)."""
    if ndim < 2:
        return weight
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.view(shape)


def _invalid(reduction: str):
    return ValueError(f"{reduction} is not a valid value for reduction")


def _cross_entropy_loss(
    input, target, weight=None, reduction="mean", ignore_index=-100, label_smoothing=0.0
):
    class_dim = 1 if input.ndim > 1 else 0
    if target.dtype.is_floating_point:
        return _probabilities(input, target, weight, reduction, label_smoothing, class_dim)
    logp = log_softmax(input, class_dim)
    loss = OPS["nll_loss"](logp, target, weight, reduction, ignore_index)
    if not label_smoothing:
        return loss
    smooth = _smooth_loss(logp, target, weight, reduction, ignore_index, class_dim)
    share = label_smoothing / logp.shape[class_dim]
    kept = _scalar(loss * (1 - label_smoothing), "MulBackward1", loss, 1 - label_smoothing)
    return kept + _scalar(smooth * share, "MulBackward1", smooth, share)


def _probabilities(input, target, weight, reduction, label_smoothing, class_dim):
    """Cross entropy with class probabilities: -sum(log_softmax(input) * target [* weight])."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"cross_entropy: probability targets must have the input's shape "
            f"{list(input.shape)}, got {list(target.shape)}"
        )
    classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    if label_smoothing > 0:
        scaled = _scalar(
            target * (1 - label_smoothing), "MulBackward1", target, 1 - label_smoothing
        )
        target = _scalar(scaled + label_smoothing / classes, "AddBackward1", scaled, None)
    product = logp * target
    if weight is not None:
        product = product * _class_view(weight, input.ndim, class_dim)
    if reduction == "mean":
        if input.numel() == 0:
            return -product.sum().fill_(math.nan)
        count, total = input.numel() // classes, -product.sum()
        return _scalar(total / count, "DivBackward1", total, count)
    if reduction == "sum":
        return -product.sum()
    if reduction == "none":
        return -product.sum(class_dim)
    raise _invalid(reduction)


def _smooth_loss(logp, target, weight, reduction, ignore_index, class_dim):
    """The label-smoothing term before its share: -sum of the (weighted) log-probabilities
    over the classes, 0 where the target is ignored, reduced as the NLL term is."""
    ignored = target == ignore_index
    if weight is not None:
        smooth = -(logp * _class_view(weight, logp.ndim, class_dim)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    # out of place: ember's masked_fill_ is a composite written back (a CopyBackwards node),
    # where PyTorch's in-place one shows MaskedFillBackward0, as this does
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is not None:  # normalised by the targets' weights, as nll_loss is
            # PyTorch's form for tensor subclasses (functorch's): no masked_select, so vmap runs
            picked = weight.gather(0, target.masked_fill(ignored, 0).flatten())
            return smooth.sum() / picked.masked_fill(ignored.flatten(), 0).sum()
        return smooth.sum() / (~ignored).sum()
    if reduction == "sum":
        return smooth.sum()
    if reduction == "none":
        return smooth
    raise _invalid(reduction)
