"""Normalization: batch_norm, layer_norm, group_norm, rms_norm, instance_norm, normalize."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember.autograd import Function
from ember.autograd.graph_names import present
from ember.dispatcher.optable import OPS

from .pool_nd import avg_pool3d
from .pooling import avg_pool2d


def _mixed(input, *params) -> bool:
    """A float16/bfloat16 input with float32 parameters (an autocast region's activations with a
    model's weights): PyTorch's norms compute in float32 and return the input's dtype."""
    return input.dtype in (ember.float16, ember.bfloat16) and any(
        p is not None and p.dtype is ember.float32 for p in params
    )


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * weight.view(shape)
    if bias is not None:
        out = out + bias.view(shape)
    return out


def _batch_norm_below_2d(input, running_mean, running_var):
    """A 0-d or 1-d input has no channel dim: PyTorch counts 0 channels, so an empty input with
    empty statistics comes back empty, and any other finds no dim 1."""
    if input.numel() == 0:
        for stat in (running_mean, running_var):
            if stat is not None and stat.numel() != 0:
                raise RuntimeError(f"running_mean should contain 0 elements not {stat.numel()}")
        return input.clone()
    raise IndexError(
        f"Dimension out of range (expected to be in range of [-1, 0], but got 1) (batch_norm: "
        f"expected at least 2-D input (N, C, ...), got {input.ndim}D)"
    )


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Normalise over the batch (and spatial) dims per channel (dim 1)."""
    if _mixed(input, running_mean, weight, bias):
        out = batch_norm(input.float(), running_mean, running_var, weight, bias, training,
                         momentum, eps)  # fmt: skip
        return out.to(input.dtype)
    if input.ndim < 2:
        return _batch_norm_below_2d(input, running_mean, running_var)
    dims = [0] + list(range(2, input.ndim))
    shape = [1, input.shape[1]] + [1] * (input.ndim - 2)
    if training:
        count = math.prod(input.shape[:1] + input.shape[2:])
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)}"
            )
        if count == 0:  # an empty batch: no statistics, running ones untouched (PyTorch)
            return _affine(input, weight, bias, shape)
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        if running_mean is not None:
            with ember.no_grad():
                running_mean.lerp_(mean, momentum)
                # count stays an int of the trace (not a float baked into the graph), so a
                # size-generic program corrects by each call's batch (compiler/dynamic.py)
                running_var.lerp_(var * count / (count - 1), momentum)
    else:
        mean, var = running_mean, running_var
    # Per-channel scale and shift first (C values), then one multiply-add over the input: two
    # full-size passes instead of four, and PyTorch's CPU kernel rounds the same way.
    invstd = ember.rsqrt(var + eps)
    scale = invstd if weight is None else invstd * weight
    shift = -mean * scale if bias is None else bias - mean * scale
    out = input * scale.view(shape) + shift.view(shape)
    if out._grad_fn is None:
        return out
    # PyTorch's one node keeps the batch statistics it computed (empty ones in eval mode)
    none = ember.empty(0, dtype=input.dtype, device=input.device)
    saved = {
        "input": input,
        "weight": weight,
        "running_mean": running_mean,
        "running_var": running_var,
        "training": training,
        "eps": eps,
        "result1": mean.detach() if training else none,
        "result2": invstd.detach() if training else none,
    }
    return present(out, "NativeBatchNormBackward0", input, weight, bias, saved=saved)


def _trailing_dims(name, input, normalized_shape):
    """The dims ``normalized_shape`` covers, after checking that ``input`` ends with it."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or tuple(input.shape[input.ndim - len(shape) :]) != shape:
        raise RuntimeError(
            f"{name}: Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    return list(range(input.ndim - len(shape), input.ndim))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims."""
    dims = _trailing_dims("layer_norm", input, normalized_shape)
    return OPS["layer_norm"](input, input.shape[dims[0] :], weight, bias, eps)


# torch.finfo(dtype).eps: RMSNorm's default eps.
_MACHINE_EPS = {
    ember.float16: 0.0009765625,
    ember.bfloat16: 0.0078125,
    ember.float32: 1.1920928955078125e-07,
    ember.float64: 2.220446049250313e-16,
}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Scale by the root mean square over the trailing ``normalized_shape`` dims."""
    dims = _trailing_dims("rms_norm", input, normalized_shape)
    if eps is None:
        eps = _MACHINE_EPS.get(input.dtype, _MACHINE_EPS[ember.float32])
    out = input * ember.rsqrt((input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each of ``num_groups`` channel groups of each sample."""
    return OPS["group_norm"](input, num_groups, weight, bias, eps)


def _check_channel_params(op: str, input, weight, bias) -> None:
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and tuple(param.shape) != (input.shape[1],):
            raise RuntimeError(
                f"{op}: Expected {name} to be a vector of size equal to the number of "
                f"channels in input, but got {name} of shape {list(param.shape)} and input of "
                f"shape {list(input.shape)}"
            )


def _group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if _mixed(input, weight, bias):
        return _group_norm(input.float(), num_groups, weight, bias, eps).to(input.dtype)
    if input.ndim < 2:
        raise RuntimeError(
            f"group_norm: Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"group_norm: Expected number of channels in input to be divisible by num_groups, but "
            f"got input of shape {list(input.shape)} and num_groups={num_groups}"
        )
    _check_channel_params("group_norm", input, weight, bias)
    # each group is one layer_norm row; its size spelled out, as an empty batch infers none
    grouped = input.reshape(n, num_groups, input.numel() // max(n * num_groups, 1))
    out = OPS["layer_norm"](grouped, grouped.shape[-1:], None, None, eps).view(input.shape)
    return _affine(out, weight, bias, [1, c] + [1] * (input.ndim - 2))


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """Normalise each channel of each sample over its spatial dims (with ``use_input_stats``,
    updating the running statistics by their mean over the batch, as PyTorch), or by the
    running statistics."""
    if use_input_stats:
        if math.prod(input.shape[2:]) == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size "
                f"{list(input.shape)}"
            )
        if running_mean is not None or running_var is not None:
            _track_instance_stats(input, running_mean, running_var, momentum)
        return _instance_norm(input, weight, bias, eps)
    shape = [1, input.shape[1]] + [1] * (input.ndim - 2)
    out = (input - running_mean.view(shape)) * ember.rsqrt(running_var.view(shape) + eps)
    return _affine(out, weight, bias, shape)


def _instance_norm(input, weight, bias, eps):
    """PyTorch's instance norm is batch norm over the (1, N * C, *spatial) view, viewed back.
    ember normalises that view with its layer_norm row over the spatial dims (one fused pass
    per instance) and shows the node as PyTorch's NativeBatchNormBackward0, whose mean and
    invstd are computed when asked (saved_values.py); weight and bias apply after the view."""
    if _mixed(input, weight, bias):
        return _instance_norm(input.float(), weight, bias, eps).to(input.dtype)
    _check_channel_params("instance_norm", input, weight, bias)
    n, c, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    flat = input.reshape(1, n * c, *spatial)
    out = OPS["layer_norm"](flat, spatial, None, None, eps)
    saved = dict.fromkeys(("weight", "running_mean", "running_var"))
    saved |= {"input": flat, "training": True, "eps": eps}
    present(out, "NativeBatchNormBackward0", flat, None, None, saved=saved)
    return _affine(out.view(input.shape), weight, bias, [1, c] + [1] * (input.ndim - 2))


def _track_instance_stats(input, running_mean, running_var, momentum) -> None:
    """PyTorch's instance norm runs batch norm over (1, N * C, *): each instance's mean and
    unbiased variance, averaged over the batch, move the running statistics."""
    dims = list(range(2, input.ndim))
    count = math.prod(input.shape[2:])
    with ember.no_grad():
        x = input.detach()
        if running_mean is not None:
            running_mean.lerp_(x.mean(dims).mean(0), momentum)
        if running_var is not None:
            unbiased = x.var(dims, correction=0) * (count / (count - 1))
            running_var.lerp_(unbiased.mean(0), momentum)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """``x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta``."""
    if input.ndim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)"
        )
    if input.numel() == 0:
        return input
    div = input * input
    pads = (size // 2, (size - 1) // 2)
    if input.ndim == 3:
        div = OPS["constant_pad_nd"](div.unsqueeze(1), (0, 0, *pads), 0)
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = OPS["constant_pad_nd"](div, (0, 0, 0, 0, *pads), 0)
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    return input / (div * alpha + k).pow(beta)


def norm_at_least(input, p: float, dim: int, eps: float, keepdim: bool = False):
    """``max(||input||_p, eps)`` along ``dim``, as PyTorch's ``norm(...).clamp_min(eps)``. The
    norm's formula gives no gradient through a zero norm, so a zero vector gets PyTorch's
    gradient instead of 0 * inf = NaN; clamping after the root keeps p <= 0 finite."""
    return ember.clamp_min(ember.norm(input, p, dim, keepdim), eps)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim`` (``out=``: PyTorch's ``div`` into it).
    The denominator is expanded to the input's shape first, as PyTorch's (its graph)."""
    denominator = norm_at_least(input, p, dim, eps, keepdim=True).expand_as(input)
    if out is None:
        return input / denominator
    return ember.div(input, denominator, out=out)


def _cross_map_windows(channels: int, size: int):
    """The channel windows of PyTorch's legacy CrossMapLRN2d as 0/1 matrices: the forward's
    (its running sum never drops channel 0 once past the first window) and the backward's
    (shifted by ``size - (size - 1) / 2``), kept as PyTorch computes them."""
    pre = int((size - 1) / 2 + 1)
    forward = np.zeros((channels, channels))
    for c in range(channels):
        high = min(c + pre - 1, channels - 1)
        if c <= pre:
            forward[c, : high + 1] = 1
        else:
            forward[c, c - pre + 1 : high + 1] = 1
            forward[c, 0] = 1
    shift = int(size - (size - 1) / 2)
    backward = np.zeros((channels, channels))
    for c in range(channels):
        backward[c, max(c - shift, 0) : min(c + size - 1 - shift, channels - 1) + 1] = 1
    return forward, backward


def _channel_mix(matrix, x):
    """``sum_j matrix[c, j] x[:, j]`` for (N, C, H, W) ``x``."""
    return OPS["matmul"](matrix, x.movedim(1, -2)).movedim(-2, 1)


class _CrossMapLRN2d(Function):
    """PyTorch's CrossMapLRN2d: its forward, and its hand-written backward (not the exact
    gradient of that forward; PyTorch's own autograd Function)."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        forward, backward = (
            ember.tensor(m, dtype=input.dtype, device=input.device)
            for m in _cross_map_windows(input.shape[1], size)
        )
        scale = _channel_mix(forward, input * input) * (alpha / size) + k
        output = input * scale.pow(-beta)
        ctx.save_for_backward(input, output, scale, backward)
        ctx.coefficient, ctx.beta = 2 * alpha * beta / size, beta
        return output

    @staticmethod
    def backward(ctx, grad):
        input, output, scale, backward = ctx.saved_tensors
        ratio = _channel_mix(backward, grad * output / scale)
        return scale.pow(-ctx.beta) * grad - ctx.coefficient * input * ratio, None, None, None, None


def cross_map_lrn2d(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
    """Local response normalisation across channels of (N, C, H, W), PyTorch's legacy form."""
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    if size > 1:
        return _CrossMapLRN2d.apply(input, size, alpha, beta, k)
    # PyTorch's backward fails for size 1; this is the exact gradient of its forward
    forward, _ = _cross_map_windows(input.shape[1], size)
    matrix = ember.tensor(forward, dtype=input.dtype, device=input.device)
    return input * (_channel_mix(matrix, input * input) * (alpha / size) + k).pow(-beta)
