"""index_reduce of PyTorch's core surface (prod, mean, amax, amin), composed of existing index
ops so that autograd comes from the parts: means through index_add, the others one round per
repeat of an index (a round's indices are distinct, so index_select and index_copy carry it)."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds._common import missing_kernel, wrap_dim
from ..opdef import DTYPES_NUMERIC, Kind, OpDef
from .data import OUT_INTO_COPY

_REDUCTIONS = ("prod", "mean", "amax", "amin")
_COMBINE = {"prod": "mul", "amax": "maximum", "amin": "minimum"}  # ember's, once bound


def check_index_reduce(x, dim: int, index, source, reduce) -> None:
    """PyTorch's index_reduce meta function, in its words."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    name = dt.SCALAR_NAMES
    if index.ndim > 1:
        raise IndexError(
            "index_reduce_(): Index is supposed to be a vector, but got dim: "
            f"{index.ndim} with type: {name[index.dtype]} and size: {list(index.shape)}"
        )
    if index.dtype not in (ember.int32, ember.int64):
        raise RuntimeError(
            f"index_reduce_(): Expected dtype int32/int64 for index but got: {name[index.dtype]}"
        )
    if x.dtype is not source.dtype:
        raise RuntimeError(
            f"index_reduce_(): self ({name[x.dtype]}) and source ({name[source.dtype]}) must "
            "have the same scalar type"
        )
    sliced = [s for d, s in enumerate(x.shape) if d != dim]
    if source.ndim and sliced != [s for d, s in enumerate(source.shape) if d != dim]:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}"
        )
    count = source.shape[dim] if source.ndim else 1
    if index.numel() != count:
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({count}), for dim: {dim}"
        )


def _mean(x, dim: int, index, source, include_self: bool):
    total = x if include_self else x.index_fill(dim, index, 0)
    total = total.index_add(dim, index, source)
    ones = ember.ones(index.shape, dtype=x.dtype, device=x.device)
    counts = ember.zeros(x.shape[dim], dtype=x.dtype, device=x.device).index_add(0, index, ones)
    counts = ember.clamp(counts + 1 if include_self else counts, 1, None)
    shape = [1] * x.ndim
    shape[dim] = -1
    counts = counts.reshape(shape)
    if x.is_floating_point():
        return total / counts
    return ember.div(total, counts, rounding_mode="floor")


def _rounds(positions: np.ndarray) -> list:
    """Positions of ``positions`` grouped by how many equal ones precede each: every group's
    values are distinct."""
    order = np.argsort(positions, kind="stable")
    ordered = positions[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ordered)) + 1] if ordered.size else np.zeros(0, int)
    run_start = np.repeat(starts, np.diff(np.r_[starts, ordered.size]))
    rank = np.empty(positions.size, np.int64)
    rank[order] = np.arange(ordered.size) - run_start
    return [np.flatnonzero(rank == r) for r in range(int(rank.max(initial=-1)) + 1)]


def _fold(x, dim: int, index, source, reduce: str, include_self: bool, rounding=None):
    """Each round combines one occurrence of every index, in index order (``rounding``: a
    dtype each combined value is rounded to, as a kernel computing in it would)."""
    positions = np.asarray(index.tolist(), np.int64).reshape(-1)
    combine = getattr(ember, _COMBINE[reduce])
    out = x
    for step, chosen in enumerate(_rounds(positions)):
        picked = ember.tensor(chosen, dtype=ember.int64, device=x.device)
        at = index[picked]
        values = source.index_select(dim, picked)
        if step or include_self:
            values = combine(out.index_select(dim, at), values)
            if rounding is not None:
                values = values.to(rounding).to(x.dtype)
        out = out.index_copy(dim, at, values)
    return out


_SIGNED = {2: dt.int16, 4: dt.int32, 8: dt.int64}


def _limited_product(x, dim: int, index, source):
    """'prod' over self on a limited dtype as PyTorch's kernel computes it: each product of a
    float8 rounded to it (in float32 here), unsigned products on the same bits as the signed
    integers of their width (both wrap alike)."""
    if x.dtype in dt.FLOAT8:
        out = _fold(x.float(), dim, index, source.float(), "prod", True, rounding=x.dtype)
        return out.to(x.dtype)
    signed = _SIGNED[x.dtype.itemsize]
    return _fold(x.view(signed), dim, index, source.view(signed), "prod", True).view(x.dtype)


# PyTorch's CPU index_reduce on float8 and uint16/32/64 (torch 2.13, probed): only 'prod' over
# self of a 2-d or larger input runs, a product per index through its mul kernel (which takes
# these dtypes but for a one-element float8 slice); an empty index runs for every reduce. The
# other calls stop at the kernel named here.
_LIMITED_KERNELS = {"mean": "add_stub", "amax": "maximum_cpu", "amin": "minimum_cpu"}


def _check_limited(x, dim: int, index, reduce: str, include_self: bool) -> bool:
    """Whether a limited-dtype call returns self's values (an empty index); PyTorch's refusal
    for the calls its kernels lack."""
    if not include_self:
        raise missing_kernel("index_reduce_func_exclude_input_init", x.dtype)
    if x.ndim <= 1:
        raise missing_kernel("index_func_", x.dtype)
    if index.numel() == 0:
        return True
    if reduce != "prod":
        raise missing_kernel(_LIMITED_KERNELS[reduce], x.dtype)
    if x.dtype in dt.FLOAT8 and math.prod(n for d, n in enumerate(x.shape) if d != dim) == 1:
        raise missing_kernel("mul_cpu_reduced_float", x.dtype)
    return False


def _index_reduce(x, dim, index, source, reduce, include_self=True):
    dim = wrap_dim(dim, x.ndim, "index_reduce")
    check_index_reduce(x, dim, index, source, reduce)
    if x.dtype in dt.LIMITED_SET and _check_limited(x, dim, index, reduce, include_self):
        return x.clone()
    size = x.shape[dim] if x.ndim else 1
    index = index.reshape(-1).to(ember.int64)
    if index.numel() and bool(((index < 0) | (index >= size)).any()):
        raise IndexError("index out of range in self")
    flat = x.reshape(1) if not x.ndim else x  # a 0-d input is one slot along dim 0
    source = source.reshape(1) if not source.ndim else source
    if reduce == "mean":
        result = _mean(flat, dim, index, source, include_self)
    elif x.dtype in dt.LIMITED_SET:
        result = _limited_product(flat, dim, index, source)
    else:
        result = _fold(flat, dim, index, source, reduce, include_self)
    return result.reshape(x.shape)


def _np_index_reduce(x, dim, index, source, reduce, include_self=True):
    out = np.array(x, copy=True)
    x0, src = (out.reshape(1), source.reshape(1)) if out.ndim == 0 else (out, source)
    x0 = np.moveaxis(x0, dim, 0)
    src = np.moveaxis(src, dim, 0)
    fold = {"prod": np.multiply, "amax": np.fmax, "amin": np.fmin}
    for place in set(np.reshape(index, -1).tolist()):
        found = src[np.reshape(index, -1) == place]
        items = np.concatenate([x0[place : place + 1], found]) if include_self else found
        if reduce == "mean":
            total = items.sum(0, dtype=x.dtype)
            x0[place] = total / len(items) if x.dtype.kind == "f" else total // len(items)
        else:
            x0[place] = fold[reduce].reduce(items, 0)
    return out


ROWS = [
    OpDef(
        "index_reduce(Tensor input, int dim, Tensor index, Tensor source, str reduce, *, "
        "bool include_self=True) -> Tensor",
        Kind.INDEX,
        _np_index_reduce,
        dtypes=DTYPES_NUMERIC,
        decomposition=_index_reduce,
        samples="index_reduce",
        inplace=True,
        out=OUT_INTO_COPY,
        notes="reduce: prod, mean, amax or amin; include_self folds in the input's own values",
    ),
]
