"""Selections of PyTorch's core surface: masked_scatter (source's elements, in order, where a
mask is set), put (put_'s functional form) and combinations (every r-subset of a vector's
elements). Each decomposes into indexing, so autograd and every device come from the parts."""

from __future__ import annotations

import itertools

import numpy as np

import ember
from ember import _dtype as dt
from ember._layout import check as layout_check
from ember._pinned import pin_result

from ..kinds._common import broadcast_shapes
from ..opdef import DTYPES_ALL, Kind, OpDef
from .data import _np_put
from .surface_more import ember_scalar_name


# ---- masked_scatter --------------------------------------------------------------------------
def _check_masked_scatter(x, mask, source) -> None:
    if mask.dtype is not ember.bool:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{ember_scalar_name(mask.dtype)}"
        )
    if source.dtype is not x.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{ember_scalar_name(x.dtype)} and {ember_scalar_name(source.dtype)}"
        )


def _masked_scatter(x, mask, source):
    """PyTorch's functional form: self and mask expanded to one shape, then the k-th set
    position takes source's k-th element (a gather by the mask's running count, so no
    boolean indexing and one sync, for PyTorch's check of source's size)."""
    _check_masked_scatter(x, mask, source)
    shape = broadcast_shapes("masked_scatter", tuple(x.shape), tuple(mask.shape))
    x, mask = x.expand(shape), mask.expand(shape)
    flat = mask.reshape(-1)
    if mask.device.type != "meta":
        count = int(flat.sum().item())
        if count > source.numel():
            raise RuntimeError("Number of elements of source < number of ones in mask")
        if count == 0:
            return x.clone()
    positions = (flat.cumsum(0) - 1).clamp(min=0)
    taken = source.reshape(-1)[positions].reshape(shape)
    return ember.where(mask, taken, x)


def _np_masked_scatter(x, mask, source):
    x, mask = np.broadcast_arrays(x, mask)
    out = np.array(x, copy=True)
    out[mask] = np.reshape(source, -1)[: int(mask.sum())]
    return out


# ---- put -------------------------------------------------------------------------------------
def _put(x, index, source, accumulate=False):
    """PyTorch's functional put: a copy of input with put_ (the row with the kernel, its checks
    and its formula) applied."""
    return x.clone().put_(index, source, accumulate)


# ---- combinations ----------------------------------------------------------------------------
def _check_combinations(x, r) -> None:
    if x.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")


def _subsets(n: int, r: int, with_replacement: bool) -> list:
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    return list(pick(range(n), r))


def _combinations(x, r=2, with_replacement=False):
    _check_combinations(x, r)
    if r == 0:  # PyTorch: an empty vector, not (1, 0)
        return x[:0].clone()
    rows = _subsets(x.shape[0], r, with_replacement)
    index = ember.tensor(rows, dtype=ember.int64, device=x.device).reshape(len(rows), r)
    return x[index]


def _np_combinations(x, r=2, with_replacement=False):
    if r == 0:
        return x[:0].copy()
    rows = _subsets(x.shape[0], r, with_replacement)
    return x[np.asarray(rows, np.int64).reshape(len(rows), r)]


# ---- tril_indices, triu_indices ----------------------------------------------------------------
_INDEX_DTYPES = frozenset({dt.int32, dt.int64})


def _triangle(row: int, col: int, offset: int, lower: bool) -> np.ndarray:
    """The (2, N) coordinates in row-major order: row i keeps columns [0, i + offset] (lower)
    or [i + offset, col) (upper), clipped to the matrix. Computed on the host from the sizes
    alone, as PyTorch's, so every device (meta too) gets the same values."""
    rows = np.arange(row)
    if lower:
        starts = np.zeros(row, np.int64)
        ends = np.clip(rows + offset + 1, 0, col)
    else:
        starts = np.clip(rows + offset, 0, col)
        ends = np.full(row, col)
    counts = np.maximum(ends - starts, 0)
    firsts = np.cumsum(counts) - counts  # where each row's run begins in the output
    cols = np.arange(counts.sum()) - np.repeat(firsts, counts) + np.repeat(starts, counts)
    return np.stack([np.repeat(rows, counts), cols]).astype(np.int64).reshape(2, -1)


def _tri_indices(name: str, lower: bool):
    def indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=False):
        layout_check(name, layout)
        for what, size in (("row", row), ("col", col)):
            if size < 0:
                raise RuntimeError(f"{what} must be non-negative, got{size}")
        dtype = ember.int64 if dtype is None else dtype
        if dtype not in _INDEX_DTYPES:
            raise NotImplementedError(
                f"\"{name}\" not implemented for '{ember_scalar_name(dtype)}'"
            )
        found = ember.tensor(_triangle(row, col, offset, lower), dtype=dtype, device=device)
        return pin_result(found, pin_memory, name)

    indices.__name__ = name
    return indices


def _np_tri_indices(lower: bool):
    def reference(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=False):
        found = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
        return np.stack(found).astype(np.int64).reshape(2, -1)

    return reference


def _tri_row(name: str, lower: bool) -> OpDef:
    return OpDef(
        f"{name}(int row, int col, int offset=0, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool pin_memory=False) -> Tensor",
        Kind.FACTORY,
        _np_tri_indices(lower),
        dtypes=_INDEX_DTYPES,
        decomposition=_tri_indices(name, lower),
        method=False,
        differentiable=False,
        samples="tri_indices",
        out=None,
        notes="int64 by default, as PyTorch",
    )


ROWS = [
    OpDef(
        "masked_scatter(Tensor input, Tensor mask, Tensor source) -> Tensor",
        Kind.INDEX,
        _np_masked_scatter,
        dtypes=DTYPES_ALL,
        decomposition=_masked_scatter,
        samples="masked_scatter",
        inplace=True,
        out=None,
        notes="source's elements in order where mask (broadcast to input) is set",
    ),
    OpDef(
        "put(Tensor input, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
        Kind.INDEX,
        _np_put,
        dtypes=DTYPES_ALL,
        decomposition=_put,
        samples="put",
        out=None,
        notes="flat indices into input; duplicates without accumulate: one wins, as PyTorch",
    ),
    OpDef(
        "combinations(Tensor input, int r=2, bool with_replacement=False) -> Tensor",
        Kind.SHAPE,
        _np_combinations,
        dtypes=DTYPES_ALL,
        decomposition=_combinations,
        method=False,
        samples="combinations",
        out=None,
        notes="rows of every r-subset, in itertools' (and PyTorch's) order",
    ),
    _tri_row("tril_indices", lower=True),
    _tri_row("triu_indices", lower=False),
]
