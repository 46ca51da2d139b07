"""quantile and nanquantile of PyTorch's core surface: a sort, then the two neighbours of each
rank gathered and interpolated (linear, lower, higher, midpoint, nearest)."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds._common import wrap_dim
from ..opdef import OUT_EXACT, Kind, OpDef, Promotion

DTYPES_SINGLE_DOUBLE = frozenset((dt.float32, dt.float64))  # quantile refuses half precision


# ---- quantiles ---------------------------------------------------------------------------------
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, dim=None, keepdim=False, interpolation="linear", ignore_nan=False):
    name = "nanquantile" if ignore_nan else "quantile"
    check_quantile_args(name, x, q, interpolation)
    _check_q_values(name, q)
    return quantile_of(x, q, dim, keepdim, interpolation, ignore_nan)


def quantile_of(x, q, dim, keepdim, interpolation, ignore_nan):
    """Quantiles of checked arguments; reads no values before the kernels (meta_rules.py)."""
    name = "nanquantile" if ignore_nan else "quantile"
    scalar_q = not isinstance(q, ember.Tensor)
    if scalar_q:
        qs = ember.full((1,), float(q), dtype=x.dtype, device=x.device)
    else:
        qs = q.reshape(-1)  # a tensor q keeps its graph: quantiles are differentiable in q
    if dim is None:
        source, dim_ = x.reshape(-1), 0
    else:
        dim_ = wrap_dim(dim, x.ndim, name)
        source = x if x.ndim else x.reshape(1)
    result = _quantile_along(source, qs, dim_, interpolation, ignore_nan)
    result = _quantile_shape(result, x, dim, dim_, keepdim)
    return (
        result.squeeze(0) if scalar_q or (isinstance(q, ember.Tensor) and q.ndim == 0) else result
    )


def check_quantile_args(name, x, q, interpolation) -> None:
    if x.numel() == 0:  # PyTorch refuses any empty input, even along a non-empty dim
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if x.dtype not in DTYPES_SINGLE_DOUBLE:
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(
            f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
            f"Got {interpolation}"
        )
    if isinstance(q, ember.Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")


def _check_q_values(name, q) -> None:
    values = q.reshape(-1).tolist() if isinstance(q, ember.Tensor) else [float(q)]
    if any(not 0 <= v <= 1 for v in values):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")


def _quantile_along(x, qs, dim, interpolation, ignore_nan):
    """Quantiles ``qs`` of ``x`` along ``dim``: a new leading dim of len(qs), ``dim`` kept 1."""
    values = ember.sort(x, dim).values.movedim(dim, -1).unsqueeze(0)  # (1, ..., n), NaNs last
    n = x.shape[dim]
    valid = ember.sum(~ember.isnan(values), (-1,), keepdim=True).to(x.dtype)
    if not ignore_nan:  # a NaN anywhere makes the quantile NaN (it sorts last)
        valid = ember.where(valid < n, ember.full_like(valid, n), valid)
    shape = (-1,) + (1,) * (values.ndim - 1)
    rank = qs.reshape(shape) * (valid - 1).clamp(0, None)
    below = ember.floor(rank)
    above = ember.ceil(rank)
    if interpolation == "lower":
        above = below
    elif interpolation == "higher":
        below = above
    elif interpolation == "nearest":
        below = above = ember.round(rank)
    lo = ember.gather(values.expand(rank.shape[:1] + values.shape[1:]), -1, below.to(ember.int64))
    hi = ember.gather(values.expand(rank.shape[:1] + values.shape[1:]), -1, above.to(ember.int64))
    if interpolation == "midpoint":
        weight = ember.full_like(rank, 0.5)
    else:
        weight = rank - below
    result = ember.lerp(lo, hi, weight)
    if ignore_nan:  # a slice of NaNs only: NaN
        result = ember.where(valid == 0, ember.full_like(result, math.nan), result)
    else:
        result = ember.where(
            ember.isnan(values).any(-1, keepdim=True), ember.full_like(result, math.nan), result
        )
    return result.movedim(-1, dim + 1)


def _quantile_shape(result, x, dim, dim_, keepdim):
    if dim is None:
        if keepdim:
            return result.reshape((result.shape[0],) + (1,) * x.ndim)
        return result.reshape(result.shape[0])
    if x.ndim == 0:
        return result.reshape(result.shape[0])
    return result if keepdim else result.squeeze(dim_ + 1)


def _nanquantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    return _quantile(x, q, dim, keepdim, interpolation, ignore_nan=True)


def _np_quantile(fn):
    def reference(x, q, dim=None, keepdim=False, interpolation="linear"):
        q = np.asarray(q, np.float64)
        if np.ndim(x) == 0 and dim is not None:  # PyTorch takes dim 0 (or -1) of a scalar
            x, dim, keepdim = np.reshape(x, 1), 0, False
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, q, axis=dim, keepdims=keepdim, method=interpolation))

    return reference


ROWS = [
    *(
        OpDef(
            f"{name}(Tensor input, Tensor q, int? dim=None, bool keepdim=False, *, "
            "str interpolation='linear') -> Tensor",
            Kind.REDUCTION,
            _np_quantile(np_fn),
            promotion=Promotion.KEEP,
            dtypes=DTYPES_SINGLE_DOUBLE,
            decomposition=fn,
            samples="quantile",
            out=OUT_EXACT,
            notes="q: a float or a 0-d/1-d tensor of the input's dtype (a leading dim of results)",
        )
        for name, fn, np_fn in (
            ("quantile", _quantile, np.quantile),
            ("nanquantile", _nanquantile, np.nanquantile),
        )
    ),
]
