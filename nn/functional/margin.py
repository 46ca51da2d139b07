"""Margin and embedding losses (margin_ranking, hinge_embedding, soft_margin, multi_margin,
multilabel_margin, multilabel_soft_margin, triplet_margin), as compositions of table ops with
PyTorch's formulas, so their gradients are autograd's."""

from __future__ import annotations

import ember
from ember.autograd.graph_names import present
from ember.dispatcher.optable import OPS

from .loss import _reduce, add_scalar, legacy_reduction, minus_from, pairwise_distance


def margin_ranking_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    """``max(0, -target * (input1 - input2) + margin)``: input1 should rank above input2 where
    target is 1, below where it is -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {_size(input1)}, input2: {_size(input2)}, target: {_size(target)} "
        )
    return _reduce(ember.clamp_min(add_scalar(-target * (input1 - input2), margin), 0), reduction)


def _size(t) -> str:
    return f"ember.Size({list(t.shape)})"


def hinge_embedding_loss(
    input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"
):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1 (PyTorch's ATen
    formula, which adds both terms for any other target value)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    zeros = ember.zeros((), dtype=input.dtype, device=input.device)
    hinge = ember.where(target != 1, ember.clamp_min(minus_from(margin, input), 0), zeros)
    return _reduce(hinge + ember.where(target != -1, input, zeros), reduction)


def _one_node(loss, name: str, input, target, reduction: str, extra=None):
    """``loss``, shown as the one node PyTorch's ATen loss makes (over ``input`` alone: its
    target and weight take no gradient), which keeps the call's arguments (saved_values.SAVED)."""
    saved = {"input": input, "target": target, "reduction": reduction, **(extra or {})}
    return present(loss, name, input, saved=saved)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``, the two-class logistic loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    loss = _reduce(ember.log1p(ember.exp(-input * target)), reduction)
    return _one_node(loss, "SoftMarginLossBackward0", input, target, reduction)


def multilabel_soft_margin_loss(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """Per sample, the mean over classes of the binary cross entropy of sigmoid(input)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    log_sig = OPS["logsigmoid"]
    loss = -(target * log_sig(input) + (1 - target) * log_sig(-input))
    if weight is not None:
        loss = loss * weight
    classes = input.shape[-1] if input.ndim else 1
    loss = loss.sum(input.ndim - 1) / classes if input.ndim else loss
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    return _reduce(loss, reduction)


def _class_targets(name, input, target):
    """Batched (N, C) input and (N,) targets, checked as PyTorch's multi_margin_loss does."""
    if input.ndim > 2 or (input.numel() == 0 and input.ndim != 2):
        raise RuntimeError(
            f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, but "
            f"got: {list(input.shape)}"
        )
    x = input.reshape(1, -1) if input.ndim < 2 else input
    expected = [x.shape[0]]
    if target.numel() != x.shape[0] or (input.ndim == 2 and target.ndim != 1):
        raise RuntimeError(
            f"{name}: target tensor should be 1-D with size equal to the number of input samples "
            f"(batch size). Expected target size {expected}, but got {list(target.shape)}. Input "
            f"has shape {list(input.shape)}."
        )
    y = target.reshape(-1)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= x.shape[1]):
        raise RuntimeError("target out of range")
    return x, y


def multi_margin_loss(
    input,
    target,
    p=1,
    margin=1.0,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """Multi-class hinge loss: per sample, ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C``,
    each term scaled by ``weight[y]``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, y = _class_targets("multi_margin_loss", input, target)
    picked = x.gather(1, y.unsqueeze(1))
    z = ember.clamp(margin - picked + x, min=0)
    if p == 2:
        z = z * z
    others = ember.arange(x.shape[1], device=x.device) != y.unsqueeze(1)
    loss = (z * others.to(z.dtype)).sum(1) / x.shape[1]
    if weight is not None:
        loss = loss * weight[y]
    if input.ndim < 2:
        loss = loss.reshape(())
    extra = {"p": p, "margin": margin, "weight": weight}
    return _one_node(
        _reduce(loss, reduction), "MultiMarginLossBackward0", input, target, reduction, extra
    )


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss. ``target`` lists each sample's classes, ended by the first -1;
    per sample ``sum_{j target, i not target} max(0, 1 - (x[j] - x[i])) / C``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape) or input.ndim > 2:
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    x = input.reshape(1, -1) if input.ndim < 2 else input
    t = target.reshape(1, -1) if input.ndim < 2 else target
    classes = x.shape[1]
    if t.numel() and (int(t.min()) < -1 or int(t.max()) >= classes):
        raise RuntimeError("argument #2 'target' is out of range")
    # A target position counts while no -1 came before it (inclusive running product).
    listed = (t != -1).to(ember.int64).cumprod(1).to(ember.bool)
    safe = t.masked_fill(~listed, 0)
    # class i is a target when some listed position names it (a scatter would race on the
    # placeholder index of the unlisted positions)
    names = safe.unsqueeze(2) == ember.arange(classes, device=x.device)
    is_target = (names & listed.unsqueeze(2)).any(1)
    picked = x.gather(1, safe)  # (N, C): the score of each listed target
    # (N, target position j, class i)
    hinge = ember.clamp(1 - picked.unsqueeze(2) + x.unsqueeze(1), min=0)
    pairs = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = (hinge * pairs.to(hinge.dtype)).sum((1, 2)) / classes
    if input.ndim < 2:
        loss = loss.reshape(())
    kept = {"is_target": is_target.to(input.dtype).reshape(input.shape)}
    loss = _reduce(loss, reduction)
    return _one_node(loss, "MultilabelMarginLossBackward0", input, target, reduction, kept)


def _same_ranks(anchor, positive, negative) -> None:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
            f"negative {negative.ndim}D inputs"
        )


def _triplet(dist_pos, dist_neg, dist_swap, margin, reduction):
    if dist_swap is not None:
        dist_neg = ember.minimum(dist_neg, dist_swap)
    return _reduce(ember.clamp_min(add_scalar(dist_pos, margin) - dist_neg, 0), reduction)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin=1.0,
    p=2,
    eps=1e-6,
    swap=False,
    size_average=None,
    reduce=None,
    reduction="mean",
):
    """``max(0, margin + d(a, p) - d(a, n))`` with the p-norm pairwise distance; ``swap``
    uses ``min(d(a, n), d(p, n))`` for the negative distance."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ranks(anchor, positive, negative)

    def dist(a, b):
        return pairwise_distance(a, b, p, eps)

    swapped = dist(positive, negative) if swap else None
    return _triplet(dist(anchor, positive), dist(anchor, negative), swapped, margin, reduction)


def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """triplet_margin_loss with any ``distance_function(x, y)`` (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ranks(anchor, positive, negative)
    dist = distance_function if distance_function is not None else pairwise_distance
    swapped = dist(positive, negative) if swap else None
    return _triplet(dist(anchor, positive), dist(anchor, negative), swapped, margin, reduction)
