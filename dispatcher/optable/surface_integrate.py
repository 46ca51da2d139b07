"""The trapezoid rule of PyTorch's core surface: trapezoid, its alias trapz, and
cumulative_trapezoid. PyTorch's own composition (aten/native/Integration.cpp): slices of y,
their sums scaled by the spacing, so autograd comes from the parts. Integers compute in the
default float dtype, as the halving makes them."""

from __future__ import annotations

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds._common import wrap_dim
from ..opdef import DTYPES_NUMERIC, Kind, OpDef, Promotion

_SCHEMA = "(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1) -> Tensor"


def _check(name, y, x, dx) -> None:
    if y.dtype is ember.bool or (x is not None and x.dtype is ember.bool):
        which = "`y`" if x is None else "`x` or `y`"
        raise RuntimeError(f"{name}: received a bool input for {which}, but bool is not supported")
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: x and dx")
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")


def _spacing(name, y, x, dim):
    """x's differences along dim, shaped to broadcast against y's (PyTorch's x_viewed)."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    left, right = _pairs(x, dim)
    return right - left


def _pairs(y, dim):
    """y[..., :-1] and y[..., 1:] along dim (both empty when y has no samples there, as
    PyTorch's clamped slices)."""
    length = y.shape[dim]
    count = max(length - 1, 0)
    return y.narrow(dim, 0, count), y.narrow(dim, min(length, 1), count)


def _trapezoid_of(name):
    def trapezoid(y, x=None, dx=None, dim=-1):
        if y.ndim == 0:  # PyTorch's y.size(dim), which takes no dim of a 0-d tensor
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        dim = wrap_dim(dim, y.ndim, name)
        if y.shape[dim] == 0:  # numpy's 0 for no samples, in y's dtype
            shape = tuple(s for d, s in enumerate(y.shape) if d != dim)
            return ember.zeros(shape, dtype=y.dtype, device=y.device)
        _check(name, y, x, dx)
        if x is None:
            dx = 1.0 if dx is None else float(dx)
            ends = y.select(dim, 0) + y.select(dim, -1)
            return (y.sum(dim) - ends * 0.5) * dx
        left, right = _pairs(y, dim)
        return ((left + right) * _spacing(name, y, x, dim)).sum(dim) / 2.0

    trapezoid.__name__ = name
    return trapezoid


def _cumulative_trapezoid(y, x=None, dx=None, dim=-1):
    _check("cumulative_trapezoid", y, x, dx)
    if y.ndim == 0:  # PyTorch slices y along dim
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, y.ndim, "cumulative_trapezoid")
    left, right = _pairs(y, dim)
    if x is None:
        dx = 1.0 if dx is None else float(dx)
        return (dx / 2.0 * (left + right)).cumsum(dim)
    return ((left + right) * _spacing("cumulative_trapezoid", y, x, dim)).cumsum(dim) / 2.0


def _np_trapezoid(y, x=None, dx=None, dim=-1):
    return np.trapezoid(y, x, 1.0 if dx is None else dx, axis=dim)


def _np_cumulative_trapezoid(y, x=None, dx=None, dim=-1):
    left = np.take(y, range(0, y.shape[dim] - 1), dim)
    right = np.take(y, range(1, y.shape[dim]), dim)
    if x is None:
        step = 1.0 if dx is None else dx
    else:
        x = np.asarray(x)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[dim] = x.shape[0]
            x = x.reshape(shape)
        step = np.diff(x, axis=dim)
    return np.cumsum((left + right) * step, axis=dim) / 2.0


def _checked(name):
    """The row's argument check (the generated tests expect its refusal of bool inputs)."""

    def check(y, x=None, dx=None, dim=-1):
        _check(name, y, x, dx)

    return check


# Halves and sums in the input's precision, as PyTorch: the reference sums in float64.
_TOLERANCES = {dt.float16: (1e-2, 2e-2), dt.bfloat16: (5e-2, 1e-1)}


def _row(name, reference, decomposition):
    return OpDef(
        name + _SCHEMA,
        Kind.REDUCTION,
        reference,
        promotion=Promotion.INT_TO_FLOAT,
        dtypes=DTYPES_NUMERIC,
        decomposition=decomposition,
        method=False,
        samples="trapezoid",
        out=None,
        attrs={"check": _checked(name)},
        tolerances=_TOLERANCES,
        notes="x (sample points) or dx (their spacing), as PyTorch's two overloads",
    )


ROWS = [
    _row("trapezoid", _np_trapezoid, _trapezoid_of("trapezoid")),
    _row("trapz", _np_trapezoid, _trapezoid_of("trapz")),
    _row("cumulative_trapezoid", _np_cumulative_trapezoid, _cumulative_trapezoid),
]
