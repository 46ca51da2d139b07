"""Normalization: batch_norm, layer_norm, group_norm, rms_norm, instance_norm, normalize."""

from __future__ import annotations

import math

import ember
from ember.dispatcher.optable import OPS


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


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """Normalise over the batch (and spatial) dims per channel (dim 1)."""
    if _mixed(input, running_mean, weight, bias):
        out = batch_norm(input.float(), running_mean, running_var, weight, bias, training,
                         momentum, eps)  # fmt: skip
        return out.to(input.dtype)
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2-D input (N, C, ...), got {input.ndim}D")
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
                running_var.lerp_(var * (count / (count - 1)), momentum)
    else:
        mean, var = running_mean, running_var
    # Per-channel scale and shift first (C values), then one multiply-add over the input: two
    # full-size passes instead of four, and PyTorch's CPU kernel rounds the same way.
    scale = ember.rsqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale if bias is None else bias - mean * scale
    return input * scale.view(shape) + shift.view(shape)


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
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and tuple(param.shape) != (c,):
            raise RuntimeError(
                f"group_norm: Expected {name} to be a vector of size equal to the number of "
                f"channels in input, but got {name} of shape {list(param.shape)} and input of "
                f"shape {list(input.shape)}"
            )
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
    return _group_norm(input, input.shape[1], weight, bias, eps)


def norm_at_least(input, p: float, dim: int, eps: float, keepdim: bool = False):
    """``max(||input||_p, eps)`` along ``dim``, as PyTorch's ``norm(...).clamp_min(eps)``. The
    norm's formula gives no gradient through a zero norm, so a zero vector gets PyTorch's
    gradient instead of 0 * inf = NaN; clamping after the root keeps p <= 0 finite."""
    return ember.clamp(ember.norm(input, p, dim, keepdim), min=eps)


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    return input / norm_at_least(input, p, dim, eps, keepdim=True)
