"""linear_cross_entropy: cross entropy of ``input @ linear_weight.T + linear_bias``, either as
that composition (the reference path) or, with ``options``, batch chunk by batch chunk so the
(N, num_classes) logits never exist whole: the loss in the forward, the gradients recomputed
per chunk in the backward (PyTorch's memory-saving path for large vocabulary heads)."""

from __future__ import annotations

import dataclasses
import math
import warnings

import ember
from ember.autograd import Function

from .linear import linear
from .loss import cross_entropy


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Chunking for :func:`linear_cross_entropy`. ``batch_chunk_size`` rows per chunk (None:
    ``chunking_method``'s "aspect_ratio" rule, logits chunks about the input's size). The
    accumulation fields are PyTorch's mixed-precision policy; ember accumulates in the input
    dtype, so they are validated and otherwise have no effect."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method not in (None, "auto"):
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")

    def rows(self, batches: int, in_features: int, classes: int) -> int:
        """Rows per chunk: the given size, or PyTorch's aspect-ratio rule."""
        if self.batch_chunk_size is not None:
            return self.batch_chunk_size
        method = self.chunking_method or "aspect_ratio"
        _, _, factor = method.partition(":")
        divisor = int(factor) if factor.isdigit() else 2 if method == "auto" else 1
        rows = math.ceil(batches / math.ceil(classes / max(in_features, 1)))
        return max(1, 2 ** math.ceil(math.log2(max(rows, 1))) // divisor)


class _ChunkedLinearCrossEntropy(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, target, class_weight, reduction, ignore_index, rows):
        valid = target != ignore_index
        safe = target.masked_fill(~valid, 0)
        scale = valid.to(input.dtype)
        if class_weight is not None:
            scale = scale * class_weight[safe]
        losses = []
        for start in range(0, input.shape[0], rows):
            logits = linear(input[start : start + rows], weight, bias)
            picked = logits.gather(1, safe[start : start + rows].unsqueeze(1)).squeeze(1)
            losses.append(ember.logsumexp(logits, 1) - picked)
        loss = ember.cat(losses) * scale if losses else scale
        ctx.save_for_backward(input, weight, bias, safe, scale)
        ctx.reduction, ctx.rows = reduction, rows
        if reduction == "mean":
            ctx.total = scale.sum()
            return loss.sum() / ctx.total
        return loss.sum() if reduction == "sum" else loss

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias, safe, scale = ctx.saved_tensors
        if ctx.reduction == "mean":
            coefficient = scale * (grad / ctx.total)
        elif ctx.reduction == "sum":
            coefficient = scale * grad
        else:
            coefficient = scale * grad
        grad_input = []
        grad_weight = ember.zeros_like(weight)
        grad_bias = None if bias is None else ember.zeros_like(bias)
        for start in range(0, input.shape[0], ctx.rows):
            chunk = input[start : start + ctx.rows]
            # d(logsumexp - picked)/dlogits = softmax - one_hot(target)
            logits = linear(chunk, weight, bias).softmax(1)
            index = safe[start : start + ctx.rows].unsqueeze(1)
            logits = logits.scatter_add(1, index, -ember.ones_like(index, dtype=logits.dtype))
            logits = logits * coefficient[start : start + ctx.rows].unsqueeze(1)
            grad_input.append(logits @ weight)
            grad_weight = grad_weight + logits.t() @ chunk
            if grad_bias is not None:
                grad_bias = grad_bias + logits.sum(0)
        grads_in = ember.cat(grad_input) if grad_input else ember.zeros_like(input)
        return grads_in, grad_weight, grad_bias, None, None, None, None, None


def _chunkable(options, out_features, reduction, label_smoothing, target) -> bool:
    if options is None:
        return False
    ok = (
        not out_features
        and reduction in {"mean", "sum", "none"}
        and label_smoothing == 0.0
        and target.dtype == ember.int64
    )
    if not ok:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
            "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == "
            f"(). Got reduction={reduction!r}, label_smoothing={label_smoothing}, "
            f"target.dtype={target.dtype}, out_features={tuple(out_features)}.",
            stacklevel=3,
        )
    return ok


def _check(input, linear_weight, linear_bias):
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(
            f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}"
        )
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively"
        )
    expected = tuple(linear_weight.shape[:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != expected:
        raise RuntimeError(f"expected linear_bias shape {expected}, got {tuple(linear_bias.shape)}")
    out_features = tuple(linear_weight.shape[1:-1])
    if out_features and input.ndim == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
            f"requires batched input, (N, {input.shape[-1]}), got unbatched input with shape "
            f"{tuple(input.shape)}"
        )
    return out_features


def linear_cross_entropy(
    input,
    linear_weight,
    target,
    *,
    linear_bias=None,
    weight=None,
    reduction="mean",
    ignore_index=None,
    label_smoothing=0.0,
    options=None,
):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``; linear_weight
    (C, d_1, ..., d_K, in_features) gives a K-dimensional loss. With ``options`` (a
    LinearCrossEntropyOptions) the batch is processed in chunks to save memory."""
    out_features = _check(input, linear_weight, linear_bias)
    classes, in_features = linear_weight.shape[0], input.shape[-1]
    logits_shape = (*input.shape[:-1], classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if _chunkable(options, out_features, reduction, label_smoothing, target):
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        t = target if batched else target.unsqueeze(0)
        rows = options.rows(x.shape[0], in_features, classes)
        out = _ChunkedLinearCrossEntropy.apply(
            x, linear_weight, linear_bias, t, weight, reduction, ignore_index, rows
        )
        return out if batched or reduction != "none" else out.squeeze(0)
    flat_weight = linear_weight.reshape(-1, in_features)
    flat_bias = None if linear_bias is None else linear_bias.reshape(-1)
    logits = linear(input, flat_weight, flat_bias).reshape(logits_shape)
    return cross_entropy(
        logits,
        target,
        weight=weight,
        reduction=reduction,
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
    )
