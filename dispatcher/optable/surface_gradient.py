"""torch.gradient of PyTorch's core surface: central differences inside, one-sided ones of first
or second order at the edges, along each asked dim. PyTorch's own composition
(aten/native/ReduceOps.cpp, gradient_helper and gradient_helper_float): slices of the input
scaled by the spacing and concatenated, so autograd comes from the parts."""

from __future__ import annotations

import numbers

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds._common import Tensor, wrap_dim
from ..opdef import DTYPES_NUMERIC, Kind, OpDef, Promotion


def _is_number(spacing) -> bool:
    """A spacing for every dim (PyTorch's Scalar overload): a number or a 0-d tensor."""
    return isinstance(spacing, numbers.Number) or (
        isinstance(spacing, Tensor) and spacing.ndim == 0
    )


def _check(x, spacing: list, dim, edge_order: int) -> list:
    """PyTorch's pre_check_gradient, in its words; returns the wrapped dims."""
    if x.dtype is ember.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if x.dtype is ember.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if spacing is not None and dim is None and len(spacing) != x.ndim:
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {x.ndim}', since dim argument was not given, but got a "
            f"list of length {len(spacing)}"
        )
    if spacing is not None and dim is not None and len(spacing) != len(dim):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
            f"dim arguments to have the same length, but got a spacing argument of length "
            f"{len(spacing)} and a dim argument of length {len(dim)}."
        )
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(x.ndim)) if dim is None else [wrap_dim(d, x.ndim, "gradient") for d in dim]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[-1]} appears multiple times in the list of dims")
    if any(x.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError(
            "torch.gradient expected each dimension size to be at least edge_order+1"
        )
    return dims


def _slice(x, dim: int, start: int, stop: int | None = None):
    """``x[start:stop]`` along dim, as Python clamps its bounds."""
    begin, end, _ = slice(start, stop).indices(x.shape[dim])
    return x.narrow(dim, begin, max(end - begin, 0))


def _uniform(x, dim: int, h, edge_order: int):
    """gradient_helper_float: a uniform spacing h."""
    center = (_slice(x, dim, 2) - _slice(x, dim, 0, -2)) / h / 2
    first, second, third = (_slice(x, dim, i, i + 1) for i in range(3))
    last, before, third_last = _slice(x, dim, -1), _slice(x, dim, -2, -1), _slice(x, dim, -3, -2)
    if edge_order == 1:
        prepend = (second - first) / h
        append = (last - before) / h
    else:
        prepend = (first * -1.5 + second * 2.0 - third * 0.5) / h
        append = (third_last * 0.5 + before * -2.0 + last * 1.5) / h
    return ember.cat([prepend, center, append], dim)


def _coordinates(x, dim: int, coords, edge_order: int):
    """gradient_helper: sample points along dim (second-order accurate inside)."""
    if coords.ndim != 1:
        raise RuntimeError(
            "torch.gradient expected each element of spacing to have one dimension, but got an "
            f"element with {coords.ndim} dimensions!"
        )
    shape = [1] * x.ndim
    shape[dim] = -1
    dx = coords.diff(1, 0)
    dx1, dx2 = _slice(dx, 0, 0, -1), _slice(dx, 0, 1)
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _slice(x, dim, 0, -2) + b * _slice(x, dim, 1, -1) + c * _slice(x, dim, 2)
    first, second, third = (_slice(x, dim, i, i + 1) for i in range(3))
    last, before, third_last = _slice(x, dim, -1), _slice(x, dim, -2, -1), _slice(x, dim, -3, -2)
    if edge_order == 1:
        prepend = (second - first) / dx[0]
        append = (last - before) / dx[-1]
    else:  # three samples at least: two differences
        h0, h1, hl, hb = dx[0], dx[1], dx[-1], dx[-2]
        prepend = (
            -(2.0 * h0 + h1) / (h0 * (h0 + h1)) * first
            + (h0 + h1) / (h0 * h1) * second
            + -h0 / (h1 * (h0 + h1)) * third
        )
        append = (
            hl / (hb * (hl + hb)) * third_last
            + -(hl + hb) / (hl * hb) * before
            + (2 * hl + hb) / (hl * (hl + hb)) * last
        )
    return ember.cat([prepend, center, append], dim)


def _gradient(x, spacing=None, dim=None, edge_order=1):
    dim = [dim] if isinstance(dim, int) else dim
    uniform = spacing is None or _is_number(spacing)
    dims = _check(x, None if uniform else list(spacing), dim, edge_order)
    if uniform:
        step = 1.0 if spacing is None else spacing
        steps = [step.item() if isinstance(step, Tensor) else step] * len(dims)
    else:
        steps = list(spacing)
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(ember.get_default_dtype())
    return tuple(
        _coordinates(x, d, s, edge_order)
        if isinstance(s, Tensor)
        else _uniform(x, d, s, edge_order)
        for d, s in zip(dims, steps)
    )


def _refusal(x, spacing=None, dim=None, edge_order=1) -> None:
    """The row's dtype check (the generated tests expect these refusals)."""
    if x.dtype in (ember.uint8, ember.bool):
        _check(x, None, None, 1)


def _np_gradient(x, spacing=None, dim=None, edge_order=1):
    axes = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else dim)
    if spacing is None:
        steps = [1.0] * len(axes)
    elif not isinstance(spacing, (list, tuple)):
        steps = [float(spacing)] * len(axes)
    else:
        steps = [np.asarray(s, np.float64) if np.ndim(s) else float(s) for s in spacing]
    x = np.asarray(x, np.float64)
    found = np.gradient(x, *steps, axis=axes, edge_order=edge_order)
    return tuple(found) if isinstance(found, (list, tuple)) else (found,)


ROWS = [
    OpDef(
        "gradient(Tensor input, *, Scalar[]? spacing=None, int[]? dim=None, int edge_order=1) "
        "-> Tensor[]",
        Kind.SHAPE,
        _np_gradient,
        promotion=Promotion.INT_TO_FLOAT,
        dtypes=DTYPES_NUMERIC,
        decomposition=_gradient,
        method=False,
        samples="gradient",
        out=None,
        attrs={"check": _refusal},
        # differences of nearby values in the input's precision (the reference: float64)
        tolerances={dt.float16: (2e-2, 5e-2), dt.bfloat16: (1e-1, 2e-1)},
        notes="spacing: a number, numbers per dim, or 1-D coordinate tensors per dim",
    ),
]
