"""The native normalisation ops of PyTorch's core surface: native_layer_norm, native_group_norm
and native_batch_norm, which return the normalised output with the statistics their backward
saves, as PyTorch returns them: (out, mean, rstd), (out, mean, rstd) per sample and group,
(out, save_mean, save_invstd). Composed of reductions and elementwise ops, so autograd comes
from the parts (the statistics are differentiable outputs too, as in PyTorch)."""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds import nn as run
from ..opdef import DTYPES_FLOAT, OUT_EXACT, Kind, OpDef

# out= writes each result into its tensor and returns them in the result's tuple type
_BatchNorm = namedtuple("native_batch_norm", "output save_mean save_invstd")


def _affine(out, weight, bias, shape):
    """``out * weight + bias``, the per-feature parameters viewed as ``shape``."""
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _moments(x, dims: tuple, eps: float):
    """Mean and 1/sqrt(biased variance + eps) over dims, kept for broadcasting."""
    mean = x.mean(dims, keepdim=True)
    var = (x - mean).square().mean(dims, keepdim=True)
    return mean, ember.rsqrt(var + eps)


# ---- native_layer_norm -----------------------------------------------------------------------
def _native_layer_norm(x, normalized_shape, weight, bias, eps):
    axis = x.ndim - len(normalized_shape)
    if axis < 0 or tuple(x.shape[axis:]) != tuple(normalized_shape):
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
            f"{list(x.shape)}"
        )
    mean, rstd = _moments(x, tuple(range(axis, x.ndim)), eps)
    out = _affine((x - mean) * rstd, weight, bias, tuple(normalized_shape))
    return out, mean.detach(), rstd.detach()  # not differentiable outputs in PyTorch


def _np_native_layer_norm(x, normalized_shape, weight, bias, eps):
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    with np.errstate(all="ignore"):
        mean = x.mean(axes, keepdims=True)
        rstd = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    out = (x - mean) * rstd
    out = out * weight if weight is not None else out
    out = out + bias if bias is not None else out
    return out, mean, rstd


# ---- native_layer_norm_backward --------------------------------------------------------------
def _leading_sum(t, axis: int):
    """``t`` summed over its first ``axis`` dims (none: ``t`` itself, where ``sum(())`` would
    reduce every dim)."""
    return t.sum(tuple(range(axis))) if axis else t.clone()


def _native_layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight, bias, mask):
    """PyTorch's formula from the forward's statistics: with x^ = (x - mean) * rstd and gw =
    grad_out * weight, grad input = rstd * (gw - mean(gw) - x^ * mean(gw * x^)) over the
    normalised dims; grad weight and grad bias sum grad_out * x^ and grad_out over the others.
    Half types compute in float32, as PyTorch's kernels."""
    if x.dtype in (ember.float16, ember.bfloat16):
        up = [None if t is None else t.float() for t in (grad_out, x, mean, rstd, weight, bias)]
        grads = _native_layer_norm_backward(*up[:2], normalized_shape, *up[2:], mask)
        return tuple(None if t is None else t.to(x.dtype) for t in grads)
    axis = x.ndim - len(normalized_shape)
    dims = tuple(range(axis, x.ndim))
    inv_n = 1 / max(math.prod(normalized_shape), 1)  # n = 0: x is empty, so is every result
    normed = (x - mean) * rstd
    g_normed = grad_out if weight is None else grad_out * weight.reshape(tuple(normalized_shape))
    grad_x = grad_w = grad_b = None
    if mask[0]:
        mean_g = g_normed.sum(dims, keepdim=True) * inv_n
        sum_gx = (g_normed * normed).sum(dims, keepdim=True)
        grad_x = ember.addcmul(g_normed - mean_g, normed, sum_gx, value=-inv_n) * rstd
    if mask[1] and weight is not None:
        grad_w = _leading_sum(grad_out * normed, axis).reshape(weight.shape)
    if mask[2] and bias is not None:
        grad_b = _leading_sum(grad_out, axis).reshape(bias.shape)
    return grad_x, grad_w, grad_b


def _np_native_layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight, bias, mask):
    axis = x.ndim - len(normalized_shape)
    dims, lead = tuple(range(axis, x.ndim)), tuple(range(axis))
    normed = (x - mean) * rstd
    g_normed = grad_out if weight is None else grad_out * weight
    grad_x = rstd * (
        g_normed
        - g_normed.mean(dims, keepdims=True)
        - normed * (g_normed * normed).mean(dims, keepdims=True)
    )
    grad_w = (grad_out * normed).sum(lead) if mask[1] and weight is not None else None
    grad_b = grad_out.sum(lead) if mask[2] and bias is not None else None
    return grad_x if mask[0] else None, grad_w, grad_b


# ---- native_group_norm -----------------------------------------------------------------------
def _native_group_norm(x, weight, bias, N, C, HxW, group, eps):  # noqa: N803 - PyTorch's names
    if C % group:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(x.shape)} and num_groups={group}"
        )
    grouped = x.reshape(N, group, C // group * HxW)  # explicit: N may be 0
    mean, rstd = _moments(grouped, (2,), eps)
    out = ((grouped - mean) * rstd).reshape(x.shape)
    out = _affine(out, weight, bias, (1, C) + (1,) * (x.ndim - 2))
    return out, mean.reshape(N, group), rstd.reshape(N, group)


def _np_native_group_norm(x, weight, bias, N, C, HxW, group, eps):  # noqa: N803
    grouped = x.reshape(N, group, -1)
    mean = grouped.mean(2, keepdims=True)
    rstd = 1 / np.sqrt(grouped.var(2, keepdims=True) + eps)
    out = ((grouped - mean) * rstd).reshape(x.shape)
    shape = (1, C) + (1,) * (x.ndim - 2)
    out = out * weight.reshape(shape) if weight is not None else out
    out = out + bias.reshape(shape) if bias is not None else out
    return out, mean.reshape(N, group), rstd.reshape(N, group)


# ---- native_batch_norm -----------------------------------------------------------------------
def _update_running(running_mean, running_var, mean, var, count: int, momentum: float) -> None:
    """PyTorch's running statistics: the batch's mean, and its unbiased variance."""
    with ember.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.reshape(-1) * momentum)
        if running_var is not None:
            unbiased = var.reshape(-1) * (count / max(count - 1, 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)


def _native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "native_batch_norm: running_mean and running_var must be defined in evaluation mode"
            )
        mean = running_mean.reshape(shape)
        invstd = ember.rsqrt(running_var.reshape(shape) + eps)
        out = _affine((x - mean) * invstd, weight, bias, shape)
        empty = ember.empty(0, dtype=x.dtype, device=x.device)  # none saved in eval mode
        return _BatchNorm(out, empty, empty.clone())
    mean = x.mean(dims, keepdim=True)
    var = (x - mean).square().mean(dims, keepdim=True)
    invstd = ember.rsqrt(var + eps)
    count = math.prod(x.shape) // max(x.shape[1], 1)
    _update_running(running_mean, running_var, mean, var, count, momentum)
    out = _affine((x - mean) * invstd, weight, bias, shape)
    # the statistics are not differentiable outputs in PyTorch
    return _BatchNorm(out, mean.reshape(-1).detach(), invstd.reshape(-1).detach())


def _np_native_batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        mean, var = x.mean(axes), x.var(axes)
        saved = (mean, 1 / np.sqrt(var + eps))
    else:
        mean, var = running_mean, running_var
        saved = (np.zeros(0, x.dtype), np.zeros(0, x.dtype))
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    out = out * weight.reshape(shape) if weight is not None else out
    out = out + bias.reshape(shape) if bias is not None else out
    return (out, *saved)


# Statistics in the input's precision; the references compute in float64.
_TOLERANCES = {dt.float16: (1e-2, 1e-2), dt.bfloat16: (5e-2, 5e-2)}


def _row(schema: str, reference, decomposition, samples: str, **extra) -> OpDef:
    return OpDef(
        schema + " -> (Tensor, Tensor, Tensor)",
        Kind.NN,
        reference,
        dtypes=DTYPES_FLOAT,
        decomposition=decomposition,
        method=False,
        samples=samples,
        tolerances=_TOLERANCES,
        **extra,
    )


ROWS = [
    _row(
        "native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, "
        "float eps)",
        _np_native_layer_norm,
        _native_layer_norm,
        "native_layer_norm",
        runner=run.native_layer_norm,
        kernel_args="(out, mean, rstd, x, normalized_shape, weight, bias, eps): x, weight and "
        "bias contiguous and of one dtype; mean and rstd of x's leading shape with a 1 per "
        "normalised dim",
    ),
    _row(
        "native_layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, "
        "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask)",
        _np_native_layer_norm_backward,
        _native_layer_norm_backward,
        "native_layer_norm_backward",
        runner=run.native_layer_norm_backward,
        kernel_args="((grad_input, grad_weight, grad_bias), grad_out, x, mean, rstd, weight): "
        "all contiguous and of one dtype; a gradient not wanted is None",
        notes="layer_norm's backward on devices with a kernel (one call instead of 22 ops); "
        "differentiable through its decomposition",
    ),
    _row(
        "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int N, int C, int HxW, "
        "int group, float eps)",
        _np_native_group_norm,
        _native_group_norm,
        "native_group_norm",
    ),
    _row(
        "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
        "Tensor? running_var, bool training, float momentum, float eps)",
        _np_native_batch_norm,
        _native_batch_norm,
        "native_batch_norm",
        out=OUT_EXACT,
        notes="training: batch statistics, the running ones updated in place; else the "
        "running ones, and empty saved statistics",
    ),
]
