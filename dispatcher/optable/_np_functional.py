"""numpy references of the nn.functional rows (optable/functional.py), for the generated tests."""

from __future__ import annotations

import math

import numpy as np

from .nn import _np_log_softmax, _np_softmax, _np_windows


def _pair(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _weighted(loss, weight, reduction):
    return _reduce(loss if weight is None else loss * weight, reduction)


def linear(x, w, b=None):
    out = x @ w.T
    return out if b is None else out + b


def bilinear(x1, x2, w, b=None):
    out = np.einsum("...i,kij,...j->...k", x1, w, x2)
    return out if b is None else out + b


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    batched = x.ndim == 4
    x = x if batched else x[None]
    kernel = w.shape[2:]
    windows, _ = _np_windows(x, kernel, _pair(dilation, 2), _pair(padding, 2), _pair(stride, 2))
    c = x.shape[1]
    per_in, per_out = c // groups, w.shape[0] // groups
    parts = [
        np.einsum(
            "nckluv,ockl->nouv",
            windows[:, g * per_in : (g + 1) * per_in],
            w[g * per_out : (g + 1) * per_out],
        )
        for g in range(groups)
    ]
    out = np.concatenate(parts, axis=1)
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out if batched else out[0]


def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    x2 = x[..., None, :]
    out = conv2d(
        x2,
        w[..., None, :],
        b,
        (1, _pair(stride, 1)[0]),
        (0, _pair(padding, 1)[0]),
        (1, _pair(dilation, 1)[0]),
        groups,
    )
    return out[..., 0, :]


def conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    batched = x.ndim == 4
    x = x if batched else x[None]
    s, p = _pair(stride, 2), _pair(padding, 2)
    op, d = _pair(output_padding, 2), _pair(dilation, 2)
    n, c_in, h, wd = x.shape
    per_in, per_out = c_in // groups, w.shape[1]
    kh, kw = w.shape[2:]
    out_hw = [(size - 1) * s[i] - 2 * p[i] + d[i] * ((kh, kw)[i] - 1) + op[i] + 1
              for i, size in enumerate((h, wd))]  # fmt: skip
    full = np.zeros((n, per_out * groups, out_hw[0] + 2 * p[0], out_hw[1] + 2 * p[1]), x.dtype)
    for g in range(groups):
        xs = x[:, g * per_in : (g + 1) * per_in]
        ws = w[g * per_in : (g + 1) * per_in]
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
                rows = slice(i * d[0], i * d[0] + s[0] * (h - 1) + 1, s[0])
                cols = slice(j * d[1], j * d[1] + s[1] * (wd - 1) + 1, s[1])
                full[:, g * per_out : (g + 1) * per_out, rows, cols] += contrib
    out = full[:, :, p[0] : p[0] + out_hw[0], p[1] : p[1] + out_hw[1]]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out if batched else out[0]


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):  # fmt: skip
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ np.swapaxes(k, -1, -2)) * factor
    if is_causal:
        length, source = scores.shape[-2:]
        scores = np.where(np.triu(np.ones((length, source), bool), 1), -np.inf, scores)
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = np.where(attn_mask, scores, -np.inf)
        else:
            scores = scores + attn_mask
    return _np_softmax(scores, -1) @ v


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    grouped = x.reshape(x.shape[0], num_groups, -1)
    centred = grouped - grouped.mean(-1, keepdims=True)
    out = (centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps)).reshape(x.shape)
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    def norm(x):
        return np.maximum(np.sqrt((x * x).sum(dim)), eps)

    norms = norm(x1) * norm(x2)
    return (x1 * x2).sum(dim) / norms


def mse_loss(x, t, reduction="mean", weight=None):
    return _weighted((x - t) ** 2, weight, reduction)


def l1_loss(x, t, reduction="mean", weight=None):
    return _weighted(np.abs(x - t), weight, reduction)


def smooth_l1_loss(x, t, reduction="mean", beta=1.0):
    diff = np.abs(x - t)
    loss = diff if beta == 0 else np.where(diff < beta, 0.5 * diff**2 / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(x, t, reduction="mean", delta=1.0, weight=None):
    diff = np.abs(x - t)
    loss = np.where(diff < delta, 0.5 * diff**2, delta * (diff - 0.5 * delta))
    return _weighted(loss, weight, reduction)


def _picked(logp, target, weight, ignore_index):
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    picked = np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    weights = valid.astype(logp.dtype) * (1.0 if weight is None else weight[safe])
    return -picked * weights, weights, valid


def _class_reduce(loss, weights, reduction, unbatched):
    if reduction == "mean":
        return loss.sum() / weights.sum()
    loss = _reduce(loss, reduction)
    return loss[0] if unbatched and reduction == "none" else loss


def nll_loss(x, target, weight=None, reduction="mean", ignore_index=-100):
    unbatched = x.ndim == 1
    x, target = (x[None], target[None]) if unbatched else (x, target)
    loss, weights, _ = _picked(x, target, weight, ignore_index)
    return _class_reduce(loss, weights, reduction, unbatched)


def cross_entropy_loss(x, target, weight=None, reduction="mean", ignore_index=-100,
                       label_smoothing=0.0):  # fmt: skip
    unbatched = x.ndim == 1
    x, target = (x[None], target[None]) if unbatched else (x, target)
    logp = _np_log_softmax(x, 1)
    classes = x.shape[1]
    shape = [1, -1] + [1] * (x.ndim - 2)
    weighted = logp if weight is None else logp * weight.reshape(shape)
    if np.issubdtype(target.dtype, np.floating):
        target = target * (1 - label_smoothing) + label_smoothing / classes
        loss = -(weighted * target).sum(1)
        if reduction == "mean":
            return loss.sum() / (x.size // classes)
        loss = _reduce(loss, reduction)
        return loss[0] if unbatched and reduction == "none" else loss
    loss, weights, valid = _picked(logp, target, weight, ignore_index)
    if label_smoothing:
        spread = -weighted.sum(1) * valid
        loss = (1 - label_smoothing) * loss + (label_smoothing / classes) * spread
    return _class_reduce(loss, weights, reduction, unbatched)


def binary_cross_entropy(x, t, weight=None, reduction="mean"):
    with np.errstate(divide="ignore"):
        loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    return _weighted(loss, weight, reduction)


def _log_sigmoid(x):
    return -np.logaddexp(0, -x)


def binary_cross_entropy_with_logits(x, t, weight=None, pos_weight=None, reduction="mean"):
    positive = t * _log_sigmoid(x) * (1 if pos_weight is None else pos_weight)
    return _weighted(-(positive + (1 - t) * _log_sigmoid(-x)), weight, reduction)


def kl_div(x, t, reduction="mean", log_target=False):
    if log_target:
        loss = np.exp(t) * (t - x)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            loss = np.where(t == 0, 0.0, t * np.log(t)) - t * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0] if x.ndim else loss.sum()
    return _reduce(loss, reduction)


def cosine_embedding_loss(x1, x2, target, margin=0.0, reduction="mean"):
    dim = 1 if x1.ndim > 1 else 0
    squares = ((x1 * x1).sum(dim) + 1e-12) * ((x2 * x2).sum(dim) + 1e-12)
    cos = (x1 * x2).sum(dim) / np.sqrt(squares)
    loss = np.where(target == 1, 1 - cos, np.maximum(cos - margin, 0))
    return _reduce(loss, reduction)
