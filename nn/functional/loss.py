"""Loss functions with PyTorch's reductions and options."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

import ember
from ember.autograd import Function
from ember.autograd.graph_names import present, rename
from ember.dispatcher.optable import OPS

from .normalization import norm_at_least


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """``reduction`` from the deprecated ``size_average``/``reduce`` pair when either is given,
    with PyTorch's rule (and its deprecation warning)."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(
        "size_average and reduce args will be deprecated, please use "
        f"reduction='{reduction}' instead.",
        stacklevel=4,  # past the functional and its argument check (_arguments.py)
    )
    return reduction


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


def _warn_broadcast(name, input, target) -> None:
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"{name}: Using a target size ({list(target.shape)}) that is different to the input "
            f"size ({list(input.shape)}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            stacklevel=4,  # past the functional and its argument check (_arguments.py)
        )


def _weighted(loss, weight, reduction):
    return _reduce(loss if weight is None else loss * weight, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast("mse_loss", input, target)
    return OPS["mse_loss"](input, target, reduction, weight)


def _mse_loss(input, target, reduction="mean", weight=None):
    diff = input - target
    return _weighted(diff * diff, weight, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast("l1_loss", input, target)
    return OPS["l1_loss"](input, target, reduction, weight)


def _l1_loss(input, target, reduction="mean", weight=None):
    return _weighted(ember.abs(input - target), weight, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _warn_broadcast("smooth_l1_loss", input, target)
    return OPS["smooth_l1_loss"](input, target, reduction, beta)


def _smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    diff = ember.abs(input - target)
    if beta == 0:
        return _reduce(diff, reduction)
    loss = ember.where(diff < beta, (0.5 / beta) * diff * diff, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_broadcast("huber_loss", input, target)
    return OPS["huber_loss"](input, target, reduction, delta, weight)


def _huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    diff = ember.abs(input - target)
    loss = ember.where(diff < delta, 0.5 * diff * diff, delta * (diff - 0.5 * delta))
    return _weighted(loss, weight, reduction)


def nll_loss(
    input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"
):
    """Negative log likelihood from log-probabilities ``input`` (N, C, ...) and class ``target``."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return OPS["nll_loss"](input, target, weight, reduction, ignore_index)


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
    reduction = legacy_reduction(size_average, reduce, reduction)
    return OPS["cross_entropy_loss"](
        input, target, weight, reduction, ignore_index, label_smoothing
    )


class _BinaryCrossEntropy(Function):
    """Elementwise binary cross entropy with PyTorch's value and gradients: logs clamped at
    -100, and d/dinput = (input - target) / max(input (1 - input), 1e-12), so a probability of
    exactly 0 or 1 (a saturated sigmoid) gives a finite gradient where autograd through the
    clamped logs would give 0 * inf = NaN."""

    @staticmethod
    def forward(input, target):
        log_p = ember.clamp(ember.log(input), min=-100)
        log_q = ember.clamp(ember.log1p(-input), min=-100)
        return -(target * log_p + (1 - target) * log_q)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_input = _BinaryCrossEntropy._d_input(grad, input, target)
        if ctx.needs_input_grad[1]:
            grad_target = _BinaryCrossEntropy._d_target(grad, input)
        return grad_input, grad_target

    @staticmethod
    def jvp(ctx, input_t, target_t):  # elementwise: the VJP's factors times the tangents
        input, target = ctx.saved_tensors
        return _BinaryCrossEntropy._d_input(input_t, input, target) + (
            _BinaryCrossEntropy._d_target(target_t, input)
        )

    @staticmethod
    def vmap(info, in_dims, input, target):  # elementwise: batch both first, once
        def first(x, d):
            return x.movedim(d, 0) if d is not None else x.expand(info.batch_size, *x.shape)

        return _BinaryCrossEntropy.apply(first(input, in_dims[0]), first(target, in_dims[1])), 0

    @staticmethod
    def _d_input(grad, input, target):
        return grad * (input - target) / ember.clamp(input * (1 - input), min=1e-12)

    @staticmethod
    def _d_target(grad, input):  # unclamped, as PyTorch's (infinite at 0 and 1)
        return grad * (ember.log1p(-input) - ember.log(input))


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return OPS["binary_cross_entropy"](input, target, weight, reduction)


def _binary_cross_entropy(input, target, weight=None, reduction="mean"):
    _check_same("binary_cross_entropy", input, target)
    return _weighted(_BinaryCrossEntropy.apply(input, target), weight, reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None
):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return OPS["binary_cross_entropy_with_logits"](input, target, weight, pos_weight, reduction)


def _binary_cross_entropy_with_logits(
    input, target, weight=None, pos_weight=None, reduction="mean"
):
    _check_same("binary_cross_entropy_with_logits", input, target)
    log_sig = OPS["logsigmoid"](input)
    log_one_minus = OPS["logsigmoid"](-input)
    positive = target * log_sig if pos_weight is None else pos_weight * target * log_sig
    loss = -(positive + (1 - target) * log_one_minus)
    return _weighted(loss, weight, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return OPS["kl_div"](input, target, reduction, log_target)


def _kl_div(input, target, reduction="mean", log_target=False):
    if log_target:
        loss = ember.exp(target) * (target - input)
    else:
        loss = ember.xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``x1 . x2 / (max(||x1||, eps) max(||x2||, eps))`` along ``dim`` (broadcasting)."""
    return OPS["cosine_similarity"](x1, x2, dim, eps)


def _cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    # broadcast first, as PyTorch's: an input of size 1 along dim counts once per position
    x1, x2 = ember.broadcast_tensors(x1, x2)
    norms = norm_at_least(x1, 2, dim, eps) * norm_at_least(x2, 2, dim, eps)
    return (x1 * x2).sum(dim) / norms


def cosine_embedding_loss(
    input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"
):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return OPS["cosine_embedding_loss"](input1, input2, target, margin, reduction)


def _cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    dim = 1 if input1.ndim > 1 else 0
    # ATen's formula, node for node: 1e-12 added to each squared norm (finite at zero
    # vectors), and each target's term masked by zeros, the two added.
    squares = add_scalar((input1 * input1).sum(dim), 1e-12) * add_scalar(
        (input2 * input2).sum(dim), 1e-12
    )
    cos = (input1 * input2).sum(dim) / ember.sqrt(squares)
    zeros = ember.zeros_like(cos)
    below = present(cos - margin, "SubBackward1", cos)  # ATen's Scalar overload
    positive = ember.where(target == 1, minus_from(1, cos), zeros)
    negative = ember.where(target == -1, below.clamp_min(0), zeros)
    return _reduce(positive + negative, reduction)


def add_scalar(x, number):
    """``x + number`` as ATen's C++ losses add a number: its Scalar overload, PyTorch's
    AddBackward1 over ``x`` alone (Python's ``x + 1`` is AddBackward0)."""
    return present(x + number, "AddBackward1", x)


def minus_from(number, x):
    """``number - x`` shown as ATen's C++ computes it: a tensor filled with the number, ``x``
    subtracted (PyTorch's SubBackward0 over no input and ``x``); computed out of place, which
    vmap and forward AD take as they are."""
    return present(number - x, "SubBackward0", None, x)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    # ATen's at::norm over the last dim given as non-negative: PyTorch's NormBackward1
    dim = max(x1.ndim, x2.ndim) - 1
    return rename(add_scalar(x1 - x2, eps).norm(p, dim, keepdim=keepdim), "NormBackward1")


@functools.lru_cache(maxsize=64)
def _upper_pairs(n: int, device: str):
    """Row indices (i, j), i < j, in PyTorch's pdist order."""
    rows, cols = np.triu_indices(n, 1)
    return (
        ember.tensor(rows, dtype=ember.int64, device=device),
        ember.tensor(cols, dtype=ember.int64, device=device),
    )


def pdist(input, p: float = 2):
    """p-norm distances between every pair of rows of (N, M) ``input``: N (N - 1) / 2 values,
    the upper triangle of the distance matrix read row by row."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = _upper_pairs(input.shape[0], str(input.device))
    diff = input.index_select(0, rows) - input.index_select(0, cols)
    if p == 0:  # a count of differing entries; PyTorch's gradient is a zero tensor
        return (diff != 0).sum(-1).to(diff.dtype) + (diff * 0).sum(-1)
    return diff.norm(p, -1)


def poisson_nll_loss(
    input,
    target,
    log_input=True,
    full=False,
    size_average=None,
    eps=1e-8,
    reduce=None,
    reduction="mean",
):
    """Negative log likelihood of ``target`` under Poisson(rate): ``exp(input) - target * input``
    with log rates, ``input - target * log(input + eps)`` otherwise; ``full`` adds Stirling's
    approximation of log(target!) where target > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_input:
        loss = ember.exp(input) - target * input
    else:
        loss = input - target * ember.log(input + eps)
    if full:
        stirling = target * ember.log(target) - target + 0.5 * ember.log(2 * math.pi * target)
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def _gaussian_var(input, var):
    """``var`` shaped to broadcast over ``input`` by PyTorch's rules (one dim short, or one
    mismatched dim), after checking it is non-negative."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        return ember.full(input.shape, float(var), dtype=input.dtype, device=input.device)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return var.unsqueeze(-1)
    mismatched = [v for i, v in zip(input.shape, var.shape) if i != v]
    if input.ndim == var.ndim and sum(mismatched) == 1:
        return var
    raise ValueError("var is of incorrect size")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 (log var + (input - target)^2 / var)`` (plus ``0.5 log 2 pi`` with ``full``); var
    is clamped at ``eps`` for the value only, its gradient passing as PyTorch's does."""
    var = _gaussian_var(input, var)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not valid")
    # PyTorch clamps a clone in place under no_grad: the clamped value, the identity gradient
    # (its graph a CloneBackward0)
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (ember.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
