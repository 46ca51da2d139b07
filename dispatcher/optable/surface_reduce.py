"""Reductions and scans of PyTorch's core surface, composed of existing ops: aminmax, the nan-
reductions, order statistics over a sort (median, nanmedian, kthvalue, mode;
quantile in surface_quantile.py), the
running extremes and log-sum-exp (log-depth scans), histc and bincount (index_add)."""

from __future__ import annotations

import math

import numpy as np

import ember

from ..kinds import fused
from ..kinds._common import wrap_dim
from ..opdef import (
    DTYPES_ALL,
    DTYPES_FLOAT,
    DTYPES_INT,
    DTYPES_NUMERIC,
    OUT_EXACT,
    OUT_FROM_OUT,
    Kind,
    OpDef,
    Out,
    Promotion,
)

OUT_PAIR = Out("exact", "partial")  # (values, indices) outputs, as max(dim) takes them


def _axis(dim):
    """numpy's axis: None, [] and () reduce every dim, as in PyTorch."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return None
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


# ---- aminmax and the nan-reductions ----------------------------------------------------------
def _aminmax(x, dim=None, keepdim=False):
    from ember.return_types import Aminmax

    if dim is None and x.numel() == 0:
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            "identity."
        )
    if dim is not None:
        _check_nonempty("aminmax", x, wrap_dim(dim, x.ndim, "aminmax"))
    dims = None if dim is None else (dim,)
    return Aminmax(ember.amin(x, dims, keepdim), ember.amax(x, dims, keepdim))


def _np_aminmax(x, dim=None, keepdim=False):
    return np.amin(x, axis=dim, keepdims=keepdim), np.amax(x, axis=dim, keepdims=keepdim)


def _without_nan(x):
    return ember.where(ember.isnan(x), ember.zeros_like(x), x) if x.is_floating_point() else x


def _nansum(x, dim=None, keepdim=False, dtype=None):
    return ember.sum(_without_nan(x), dim, keepdim, dtype=dtype)


def _nanmean(x, dim=None, keepdim=False, dtype=None):
    if not x.is_floating_point():
        raise RuntimeError(
            "nanmean(): expected input to have floating point dtype but got "
            f"{x.dtype.name.capitalize()}"
        )
    count = ember.sum(~ember.isnan(x), dim, keepdim)
    return _nansum(x, dim, keepdim, dtype) / count


# ---- order statistics --------------------------------------------------------------------------
def _check_nonempty(name: str, x, dim: int) -> None:
    if x.ndim and x.shape[dim] == 0:
        raise IndexError(
            f"{name}(): Expected reduction dim {dim} to have non-zero size (input shape "
            f"{list(x.shape)})"
        )


def _pick(x, order, position, dim, keepdim):
    """``(values, indices)``: the element at ``position`` (int64, keepdim shape) of the sorted
    order along ``dim``; values gathered from ``x`` so that gradients reach it."""
    from ember.return_types import ValuesIndices

    if x.ndim == 0:
        return ValuesIndices(x.clone(), ember.zeros((), dtype=ember.int64, device=x.device))
    indices = ember.gather(order, dim, position)
    values = ember.gather(x, dim, indices)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return ValuesIndices(values, indices)


def _position(x, dim, value: int):
    shape = list(x.shape)
    shape[dim] = 1
    return ember.full(shape, value, dtype=ember.int64, device=x.device)


def _median(x, dim, keepdim=False, ignore_nan=False):
    name = "nanmedian" if ignore_nan else "median"
    dim = wrap_dim(dim, x.ndim, name)
    _check_nonempty(name, x, dim)
    if x.ndim == 0:
        return _pick(x, None, None, dim, keepdim)
    _, order = ember.sort(x, dim, stable=True)  # NaNs last, in their input order
    n = x.shape[dim]
    if not x.is_floating_point():
        return _pick(x, order, _position(x, dim, (n - 1) // 2), dim, keepdim)
    valid = ember.sum(~ember.isnan(x), (dim,), keepdim=True)
    if ignore_nan:  # the lower median of the values; all NaN: the first NaN
        position = ember.clamp((valid - 1) // 2, 0, None)
    else:  # any NaN: the first NaN
        position = ember.where(valid < n, valid, _position(x, dim, (n - 1) // 2))
    return _pick(x, order, position, dim, keepdim)


def _nanmedian(x, dim, keepdim=False):
    return _median(x, dim, keepdim, ignore_nan=True)


def _np_median(ignore_nan: bool):
    def reference(x, dim, keepdim=False):
        n = x.shape[dim] if x.ndim else 1
        order = np.argsort(x, axis=dim, kind="stable") if x.ndim else np.zeros((), np.int64)
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        valid = (~np.isnan(x)).sum(axis=dim, keepdims=True) if x.dtype.kind == "f" else n
        if ignore_nan:
            pos = np.maximum((valid - 1) // 2, 0)
        else:
            pos = np.where(valid < n, valid, (n - 1) // 2)
        pos = np.broadcast_to(np.asarray(pos), _kept(x.shape, dim))
        indices = np.take_along_axis(order, pos.astype(np.int64), dim)
        values = np.take_along_axis(x, indices, dim)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values, indices

    return reference


def _kept(shape, dim):
    shape = list(shape)
    shape[dim] = 1
    return tuple(shape)


def _kthvalue(x, k, dim=-1, keepdim=False):
    dim = wrap_dim(dim, x.ndim, "kthvalue")
    _check_nonempty("kthvalue", x, dim)
    size = x.shape[dim] if x.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if x.ndim == 0:
        return _pick(x, None, None, dim, keepdim)
    _, order = ember.sort(x, dim, stable=True)
    return _pick(x, order, _position(x, dim, k - 1), dim, keepdim)


def _np_kthvalue(x, k, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    order = np.argsort(x, axis=dim, kind="stable")
    pos = np.full(_kept(x.shape, dim), k - 1, np.int64)
    indices = np.take_along_axis(order, pos, dim)
    values = np.take_along_axis(x, indices, dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values, indices


def _mode(x, dim=-1, keepdim=False):
    """The most frequent value (the smallest of equally frequent ones) and its last index: runs
    of equal values in the stable sort, each run's length counted by a scatter-add over run ids
    (linear in the slice: a pairwise comparison took n^2 memory and ran CI out of memory)."""
    from ember.return_types import ValuesIndices

    dim = wrap_dim(dim, x.ndim, "mode")
    _check_nonempty("mode", x, dim)
    if x.ndim == 0:
        return _pick(x, None, None, dim, keepdim)
    moved = x.movedim(dim, -1)
    values, order = ember.sort(moved.detach(), -1, stable=True)
    n = moved.shape[-1]
    starts = ember.ones(moved.shape[:-1] + (1,), dtype=ember.bool, device=x.device)
    if n > 1:
        starts = ember.cat([starts, values[..., 1:] != values[..., :-1]], -1)
    run = ember.cumsum(starts.to(ember.int64), -1)
    per_run = ember.zeros(run.shape[:-1] + (n + 1,), dtype=ember.int64, device=x.device)
    per_run = per_run.scatter_add(-1, run, ember.ones_like(run))
    counts = ember.gather(per_run, -1, run)
    best = counts.amax(-1, keepdim=True)
    chosen = ember.where(counts == best, run, ember.full_like(run, n + 1)).amin(-1, keepdim=True)
    steps = ember.arange(n, device=x.device).expand(run.shape)
    position = ember.where(run == chosen, steps, ember.full_like(steps, -1)).amax(-1, keepdim=True)
    indices = ember.gather(order, -1, position)
    found = ember.gather(moved, -1, indices)
    if keepdim:
        return ValuesIndices(found.movedim(-1, dim), indices.movedim(-1, dim))
    return ValuesIndices(found.squeeze(-1), indices.squeeze(-1))


def _np_mode(x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    moved = np.moveaxis(x, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    values, indices = [], []
    for row in flat:
        uniq, counts = np.unique(row, return_counts=True)
        value = uniq[np.argmax(counts)]
        values.append(value)
        indices.append(np.nonzero(row == value)[0][-1])
    shape = moved.shape[:-1]
    values = np.array(values, x.dtype).reshape(shape)
    indices = np.array(indices, np.int64).reshape(shape)
    if keepdim:
        values, indices = np.expand_dims(values, dim), np.expand_dims(indices, dim)
    return values, indices


# ---- scans -------------------------------------------------------------------------------------
def _shifted_steps(n: int):
    step = 1
    while step < n:
        yield step
        step *= 2


def _cum_extreme(x, dim, larger: bool):
    """cummax/cummin: indices by a log-depth scan of (value, index) pairs, where the later of
    two wins on a tie and NaN beats everything (PyTorch's sequential rule); values gathered."""
    from ember.return_types import ValuesIndices

    name = "cummax" if larger else "cummin"
    dim = wrap_dim(dim, x.ndim, name)
    if x.ndim == 0:
        return ValuesIndices(x.clone(), ember.zeros((), dtype=ember.int64, device=x.device))
    n = x.shape[dim]
    shape = [1] * x.ndim
    shape[dim] = n
    index = ember.arange(n, device=x.device).reshape(shape).expand(x.shape).contiguous()
    values = x.detach()
    for step in _shifted_steps(n):
        early_v, late_v = values.narrow(dim, 0, n - step), values.narrow(dim, step, n - step)
        early_i, late_i = index.narrow(dim, 0, n - step), index.narrow(dim, step, n - step)
        better = late_v >= early_v if larger else late_v <= early_v
        if x.is_floating_point():
            better = ember.isnan(late_v) | (~ember.isnan(early_v) & better)
        values = ember.cat([values.narrow(dim, 0, step), ember.where(better, late_v, early_v)], dim)
        index = ember.cat([index.narrow(dim, 0, step), ember.where(better, late_i, early_i)], dim)
    return ValuesIndices(ember.gather(x, dim, index), index)


def _cummax(x, dim):
    return _cum_extreme(x, dim, True)


def _cummin(x, dim):
    return _cum_extreme(x, dim, False)


def _np_cum_extreme(larger: bool):
    def reference(x, dim):
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        moved = np.moveaxis(x, dim, -1)
        values, indices = np.empty_like(moved), np.zeros(moved.shape, np.int64)
        for pos in np.ndindex(moved.shape[:-1]):
            best, at = None, 0
            for i, v in enumerate(moved[pos]):
                nan_best = best is not None and isinstance(best, float) and math.isnan(best)
                if (
                    best is None
                    or (np.isnan(v) if moved.dtype.kind == "f" else False)
                    or (not nan_best and (v >= best if larger else v <= best))
                ):
                    best, at = v.item(), i
                values[pos + (i,)], indices[pos + (i,)] = best, at
        return np.moveaxis(values, -1, dim), np.moveaxis(indices, -1, dim)

    return reference


def _logcumsumexp(x, dim):
    """A log-depth scan of logaddexp: exact where one global shift would underflow."""
    dim = wrap_dim(dim, x.ndim, "logcumsumexp")
    if x.dtype in (ember.float16, ember.bfloat16):  # each round rounds: accumulate in float32
        return _logcumsumexp(x.to(ember.float32), dim).to(x.dtype)
    if x.ndim == 0:
        return x.clone()
    n = x.shape[dim]
    if x.is_complex() and n > 1:
        return _complex_logcumsumexp(x, dim, n)
    for step in _shifted_steps(n):
        combined = ember.logaddexp(x.narrow(dim, 0, n - step), x.narrow(dim, step, n - step))
        x = ember.cat([x.narrow(dim, 0, step), combined], dim)
    return x if n > 1 else x.clone()


def _complex_logcumsumexp(x, dim, n):
    """Complex inputs: PyTorch's running sum, one logaddexp per step. The imaginary part of a
    complex log is only defined up to 2 pi; the log-depth scan would pick other branches."""
    running = [x.select(dim, 0)]
    for i in range(1, n):
        running.append(ember.logaddexp(running[-1], x.select(dim, i)))
    return ember.stack(running, dim)


def _np_logcumsumexp(x, dim):
    if x.ndim == 0:
        return x.astype(np.float64)
    return np.logaddexp.accumulate(x.astype(np.float64), axis=dim)


# ---- counting ----------------------------------------------------------------------------------
def check_histc(bins, min, max) -> None:
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, but got {bins} for dimension 0")
    if float(min) > float(max):
        raise RuntimeError(
            f"histc(): max must be larger than min, got min={float(min)} max={float(max)}"
        )


def _histc(x, bins=100, min=0, max=0):
    check_histc(bins, min, max)
    low, high = float(min), float(max)
    if low == high and x.numel():
        low, high = float(x.min()), float(x.max())
    if low == high:
        low, high = low - 1, high + 1
    flat = x.detach().reshape(-1).to(ember.float64)  # bin edges computed as PyTorch: in double
    inside = (flat >= low) & (flat <= high)
    position = ((flat - low) * (bins / (high - low))).floor().to(ember.int64)
    position = ember.clamp(position, 0, bins - 1)
    # Counted in float32 at least: a float16 count stops at 2048 (2048 + 1 rounds back), and a
    # GPU's atomics add in the counts' dtype
    wide = ember.float64 if x.dtype is ember.float64 else ember.float32
    counts = ember.zeros(bins, dtype=wide, device=x.device)
    return counts.index_add(0, position, inside.to(wide)).to(x.dtype)


def _np_histc(x, bins=100, min=0, max=0):
    low, high = float(min), float(max)
    if low == high and x.size:
        low, high = float(x.min()), float(x.max())
    if low == high:
        low, high = low - 1, high + 1
    counts, _ = np.histogram(x, bins=bins, range=(low, high))
    return counts.astype(x.dtype)


def _run_bincount(op, x, weights=None, minlength=0):
    """The Backend layer of bincount: only ``input`` is held to the row's integer dtypes
    (``weights`` may be any number type)."""
    from ..kinds._common import unsupported_dtype

    if isinstance(x, ember.Tensor) and x.dtype not in op.dtypes:
        raise unsupported_dtype(op, x.dtype)
    return op.decomposition(x, weights, minlength)


def _bincount(x, weights=None, minlength=0):
    if x.ndim != 1 or x.is_floating_point() or x.dtype is ember.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.numel() and int(x.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and weights.shape != x.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = builtin_max(int(x.max()) + 1 if x.numel() else 0, minlength)
    if weights is None:
        dtype, added = ember.int64, ember.ones(x.shape, dtype=ember.int64, device=x.device)
    else:
        dtype = weights.dtype if weights.is_floating_point() else ember.float64
        added = weights.to(dtype)
    index = x.to(ember.int64)
    return ember.zeros(length, dtype=dtype, device=x.device).index_add(0, index, added)


builtin_max = max


def _np_bincount(x, weights=None, minlength=0):
    found = np.bincount(x, weights=weights, minlength=minlength)
    if weights is None:
        return found.astype(np.int64)
    return found.astype(weights.dtype if weights.dtype.kind == "f" else np.float64)


ROWS = [
    OpDef(
        "aminmax(Tensor input, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
        Kind.REDUCTION,
        _np_aminmax,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_ALL,
        decomposition=_aminmax,
        samples="aminmax",
        out=OUT_EXACT,
    ),
    OpDef(
        "nansum(Tensor input, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
        "-> Tensor",
        Kind.REDUCTION,
        lambda x, dim=None, keepdim=False, dtype=None: np.asarray(
            np.nansum(x, axis=_axis(dim), keepdims=keepdim)
        ),
        promotion=Promotion.BOOL_TO_LONG,
        decomposition=_nansum,
        samples="reduction",
        out=OUT_FROM_OUT,
    ),
    OpDef(
        "nanmean(Tensor input, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
        "-> Tensor",
        Kind.REDUCTION,
        lambda x, dim=None, keepdim=False, dtype=None: np.asarray(
            np.nanmean(x, axis=_axis(dim), keepdims=keepdim)
        ),
        promotion=Promotion.FLOAT_ONLY,
        dtypes=DTYPES_FLOAT,
        decomposition=_nanmean,
        samples="reduction",
        out=OUT_FROM_OUT,
    ),
    *(
        OpDef(
            f"{name}(Tensor input, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
            Kind.REDUCTION,
            _np_median(name == "nanmedian"),
            promotion=Promotion.KEEP,
            dtypes=DTYPES_NUMERIC,
            decomposition=fn,
            runner=fused.median,
            kernel_args="(values, indices, x, dim): both of x's rank with size 1 at dim; the "
            "element a stable sort puts at the median's rank, and its index",
            frontend=True,
            samples="reduction_one_dim_nonempty",
            out=OUT_PAIR,
            notes=f"the public {name}(input) (no dim) gives the lower median of all elements",
        )
        for name, fn in (("median", _median), ("nanmedian", _nanmedian))
    ),
    OpDef(
        "kthvalue(Tensor input, int k, int dim=-1, bool keepdim=False) "
        "-> (Tensor values, Tensor indices)",
        Kind.REDUCTION,
        _np_kthvalue,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_NUMERIC,
        decomposition=_kthvalue,
        samples="kthvalue",
        out=OUT_PAIR,
    ),
    OpDef(
        "mode(Tensor input, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
        Kind.REDUCTION,
        _np_mode,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_ALL,
        decomposition=_mode,
        samples="reduction_one_dim_nonempty",
        out=OUT_PAIR,
    ),
    *(
        OpDef(
            f"{name}(Tensor input, int dim) -> (Tensor values, Tensor indices)",
            Kind.SCAN,
            _np_cum_extreme(name == "cummax"),
            promotion=Promotion.KEEP,
            dtypes=DTYPES_ALL,
            decomposition=fn,
            samples="scan_extreme",
            out=OUT_PAIR,
        )
        for name, fn in (("cummax", _cummax), ("cummin", _cummin))
    ),
    OpDef(
        "logcumsumexp(Tensor input, int dim) -> Tensor",
        Kind.SCAN,
        _np_logcumsumexp,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_FLOAT,
        decomposition=_logcumsumexp,
        samples="scan_extreme",
        out=OUT_EXACT,
    ),
    OpDef(
        "histc(Tensor input, int bins=100, Scalar min=0, Scalar max=0) -> Tensor",
        Kind.REDUCTION,
        _np_histc,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_FLOAT,
        decomposition=_histc,
        differentiable=False,
        samples="histc",
        out=OUT_EXACT,
    ),
    OpDef(
        "bincount(Tensor input, Tensor? weights=None, int minlength=0) -> Tensor",
        Kind.REDUCTION,
        _np_bincount,
        promotion=Promotion.LONG,
        dtypes=DTYPES_INT,
        decomposition=_bincount,
        runner=_run_bincount,
        differentiable=False,
        samples="bincount",
        out=None,
    ),
]
