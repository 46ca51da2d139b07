"""Loss functions with PyTorch's reductions and options."""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS

from .activation import log_softmax


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same(name, input, target):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(
            f"{name}: Using a target size ({list(target.shape)}) that is different to the input "
            f"size ({list(input.shape)}) is not supported"
        )


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    diff = input - target
    loss = diff * diff
    return _reduce(loss if weight is None else loss * weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(ember.abs(input - target), reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    diff = ember.abs(input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    loss = ember.where(diff < beta, 0.5 * diff * diff / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    diff = ember.abs(input - target)
    loss = ember.where(diff < delta, 0.5 * diff * diff, delta * (diff - 0.5 * delta))
    return _reduce(loss if weight is None else loss * weight, reduction)


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    """Negative log likelihood from log-probabilities ``input`` (N, C, ...) and class ``target``."""
    if input.ndim < 1:
        raise ValueError("nll_loss: input must have at least 1 dimension")
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if target.dtype.is_floating_point:
        raise RuntimeError(
            f"nll_loss: expected target of integer type (class indices), got {target.dtype.name}"
        )
    if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise ValueError(
            f"nll_loss: Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
            f"{list(target.shape)}"
        )
    valid = target != ignore_index
    safe = ember.where(valid, target, ember.zeros_like(target))
    picked = input.gather(1, safe.unsqueeze(1).to(ember.int64)).squeeze(1)
    weights = valid.to(input.dtype)
    if weight is not None:
        weights = weights * weight.index_select(0, safe.reshape(-1)).view(safe.shape)
    loss = -picked * weights
    if reduction == "mean":
        return loss.sum() / weights.sum()
    return _reduce(loss, reduction)


def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """Cross entropy of logits ``input`` (N, C, ...) with class indices or class probabilities."""
    if input.ndim == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    logp = log_softmax(input, 1)
    classes = input.shape[1]
    if target.dtype.is_floating_point:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ValueError(
                f"cross_entropy: probability targets must have the input's shape "
                f"{list(input.shape)}, got {list(target.shape)}"
            )
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        weighted = (
            logp if weight is None else logp * weight.view([1, classes] + [1] * (input.ndim - 2))
        )
        loss = -(weighted * target).sum(1)
        if reduction == "mean":
            return loss.sum() / (input.numel() // classes)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction="none")
    if not label_smoothing:
        if reduction == "mean":
            valid = (target != ignore_index).to(input.dtype)
            denom = (
                valid.sum()
                if weight is None
                else (
                    weight.index_select(
                        0,
                        ember.where(
                            target != ignore_index, target, ember.zeros_like(target)
                        ).reshape(-1),
                    ).view(target.shape)
                    * valid
                ).sum()
            )
            return nll.sum() / denom
        return _reduce(nll, reduction)
    valid = (target != ignore_index).to(input.dtype)
    if weight is not None:
        smooth = -(logp * weight.view([1, classes] + [1] * (input.ndim - 2))).sum(1) * valid
    else:
        smooth = -logp.sum(1) * valid
    loss = (1 - label_smoothing) * nll + (label_smoothing / classes) * smooth
    if reduction == "mean":
        if weight is None:
            return loss.sum() / valid.sum()
        safe = ember.where(target != ignore_index, target, ember.zeros_like(target))
        return (
            loss.sum() / (weight.index_select(0, safe.reshape(-1)).view(target.shape) * valid).sum()
        )
    return _reduce(loss, reduction)


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    _check_same("binary_cross_entropy", input, target)
    # PyTorch clamps log at -100 so that log(0) stays finite.
    log_p = ember.clamp(ember.log(input), min=-100)
    log_q = ember.clamp(ember.log(1 - input), min=-100)
    loss = -(target * log_p + (1 - target) * log_q)
    return _reduce(loss if weight is None else loss * weight, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    _check_same("binary_cross_entropy_with_logits", input, target)
    log_sig = OPS["logsigmoid"](input)
    log_one_minus = OPS["logsigmoid"](-input)
    if pos_weight is not None:
        loss = -(pos_weight * target * log_sig + (1 - target) * log_one_minus)
    else:
        loss = -(target * log_sig + (1 - target) * log_one_minus)
    return _reduce(loss if weight is None else loss * weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    if log_target:
        loss = ember.exp(target) * (target - input)
    else:
        loss = ember.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0]
    return _reduce(loss, reduction)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    dot = (x1 * x2).sum(dim)
    norms = ember.clamp(x1.norm(2, dim), min=eps) * ember.clamp(x2.norm(2, dim), min=eps)
    return dot / norms


def cosine_embedding_loss(
    input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"
):
    cos = cosine_similarity(input1, input2, 1 if input1.ndim > 1 else 0, 1e-12)
    zero = ember.zeros_like(cos)
    loss = ember.where(target == 1, 1 - cos, ember.maximum(zero, cos - margin))
    return _reduce(loss, reduction)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)
