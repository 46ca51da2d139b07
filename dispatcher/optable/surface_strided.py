"""Copies and scatters through explicit strides and sizes of PyTorch's core surface:
as_strided_copy, as_strided_scatter, split_with_sizes_copy, _chunk_cat and Tensor.sum_to_size.
Each is PyTorch's own decomposition (torch/_decomp, torch/_refs) over ember ops, so autograd
and every device come for free."""

from __future__ import annotations

import math

import numpy as np

import ember

from ..kinds._common import wrap_dim
from ..opdef import OUT_EXACT, Kind, OpDef, Out, Promotion


# ---- as_strided_copy / as_strided_scatter ----------------------------------------------------
def _as_strided_copy(x, size, stride, storage_offset=None):
    return ember.as_strided(x, size, stride, storage_offset).clone()


def _storage_positions(x, size, stride, storage_offset):
    """The flat positions of x's (contiguous) elements that ``as_strided`` would address."""
    offset = 0 if storage_offset is None else int(storage_offset)
    needed = 1 + offset + sum((s - 1) * st for s, st in zip(size, stride))
    if math.prod(size) and needed > x.numel():
        raise RuntimeError(
            f"as_strided_scatter: sizes {list(size)}, strides {list(stride)}, storage offset "
            f"{offset}  and itemsize {x.dtype.itemsize} requiring a storage size of "
            f"{needed * x.dtype.itemsize} are out of bounds for storage of size "
            f"{x.numel() * x.dtype.itemsize}"
        )
    flat = ember.arange(max(x.numel(), 1), device=x.device)
    return ember.as_strided(flat, size, stride, offset)


def _as_strided_scatter(x, src, size, stride, storage_offset=None):
    size, stride = tuple(size), tuple(stride)
    if tuple(src.shape) != size:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(size)}"
        )
    positions = _storage_positions(x, size, stride, storage_offset).reshape(-1)
    flat = x.reshape(-1)
    if not positions.numel():
        return x.clone()
    # scatter, not a copy into a view of a clone: its gradient is a formula of the table
    return flat.scatter(0, positions, src.reshape(-1).to(x.dtype)).reshape(x.shape)


def _np_as_strided(x, size, stride, storage_offset=None):
    flat = np.ascontiguousarray(x).reshape(-1)
    offset = 0 if storage_offset is None else storage_offset
    item = flat.itemsize
    base = flat[offset:] if flat.size else flat
    return np.lib.stride_tricks.as_strided(base, size, [s * item for s in stride])


def _np_as_strided_copy(x, size, stride, storage_offset=None):
    return np.array(_np_as_strided(x, size, stride, storage_offset))


def _np_as_strided_scatter(x, src, size, stride, storage_offset=None):
    out = np.array(x, copy=True).reshape(-1)
    positions = _np_as_strided(np.arange(max(out.size, 1)), size, stride, storage_offset)
    out[positions.reshape(-1)] = np.asarray(src).reshape(-1)
    return out.reshape(np.shape(x))


# ---- split_with_sizes_copy -------------------------------------------------------------------
def _split_with_sizes_copy(x, split_sizes, dim=0):
    return tuple(piece.clone() for piece in ember.split_with_sizes(x, list(split_sizes), dim))


def _np_split_with_sizes_copy(x, split_sizes, dim=0):
    cuts = np.cumsum(split_sizes)[:-1]
    return tuple(np.array(piece) for piece in np.split(x, cuts, axis=dim))


def _split_pieces(x, split_sizes, dim=0):
    """The reads of out=: PyTorch copies each split into its out, one by one."""
    return tuple((piece,) for piece in ember.split_with_sizes(x, list(split_sizes), dim))


# ---- _chunk_cat ------------------------------------------------------------------------------
def _chunk_cat_dim(tensors, dim: int, num_chunks: int) -> int:
    """PyTorch's _preprocess_chunk_cat_inputs: its checks, then the wrapped dim."""
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    for t in tensors:
        if not t.numel():
            raise RuntimeError("_chunk_cat expects non-empty tensor")
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError("_chunk_cat expects all input tensors with the same dtype")
    if len({t.ndim for t in tensors}) == 1:
        dim = wrap_dim(dim, tensors[0].ndim, "_chunk_cat")
    elif dim < 0:
        raise RuntimeError(
            "_chunk_cat expects non-negative dim when input tensors have different ndims"
        )
    elif any(dim >= t.ndim for t in tensors):
        raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    if any(tuple(t.shape[:dim]) != tuple(tensors[0].shape[:dim]) for t in tensors):
        raise RuntimeError(
            "_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors"
        )
    return dim


def _chunk_cat(tensors, dim, num_chunks):
    tensors = list(tensors)
    dim = _chunk_cat_dim(tensors, dim, num_chunks)
    padded = []
    for t in tensors:
        along = t.shape[dim]
        wanted = -(-along // num_chunks) * num_chunks
        if wanted != along:
            t = ember.constant_pad_nd(t, [0, 0] * (t.ndim - dim - 1) + [0, wanted - along], 0)
        padded.append(t.reshape(tuple(t.shape[:dim]) + (num_chunks, -1)))
    return ember.cat(padded, dim + 1)


def _np_chunk_cat(tensors, dim, num_chunks):
    padded = []
    for t in tensors:
        dim_t = dim % t.ndim
        along = t.shape[dim_t]
        extra = -(-along // num_chunks) * num_chunks - along
        widths = [(0, 0)] * t.ndim
        widths[dim_t] = (0, extra)
        t = np.pad(t, widths)
        padded.append(t.reshape(t.shape[:dim_t] + (num_chunks, -1)))
    return np.concatenate(padded, dim_t + 1)


# ---- sum_to_size -----------------------------------------------------------------------------
def _summed_dims(shape: tuple, size: tuple) -> tuple:
    """The dims of ``shape`` that sum away to reach ``size`` (PyTorch's is_expandable_to)."""
    lead = len(shape) - len(size)
    fits = lead >= 0 and all(s in (1, have) for s, have in zip(size, shape[lead:]))
    if not fits:
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    kept = [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    return tuple(range(lead)), tuple(kept)


def _sum_to_size(x, size):
    size = tuple(size)
    if not size:  # PyTorch's sum_to: an empty size sums everything (bool to int64)
        return x.sum()
    leading, kept = _summed_dims(tuple(x.shape), size)
    out = x.sum(kept, keepdim=True) if kept else x
    return out.sum(leading) if leading else out


def _np_sum_to_size(x, size):
    if not tuple(size):
        return np.asarray(np.sum(x))
    leading, kept = _summed_dims(np.shape(x), tuple(size))
    out = np.sum(x, kept, keepdims=True) if kept else x
    return np.asarray(np.sum(out, leading) if leading else out)


ROWS = [
    OpDef(
        "as_strided_copy(Tensor input, int[] size, int[] stride, int? storage_offset=None) "
        "-> Tensor",
        Kind.COPY,
        _np_as_strided_copy,
        decomposition=_as_strided_copy,
        method=False,
        samples="as_strided",
        out=OUT_EXACT,
        notes="as_strided, then a contiguous copy of its values",
    ),
    OpDef(
        "as_strided_scatter(Tensor input, Tensor src, int[] size, int[] stride, "
        "int? storage_offset=None) -> Tensor",
        Kind.INDEX,
        _np_as_strided_scatter,
        decomposition=_as_strided_scatter,
        samples="as_strided_scatter",
        out=None,
        notes="a contiguous input's copy with src written where as_strided points: a scatter "
        "over the flat positions, so the gradient is scatter's",
    ),
    OpDef(
        "split_with_sizes_copy(Tensor input, int[] split_sizes, int dim=0) -> Tensor[]",
        Kind.COPY,
        _np_split_with_sizes_copy,
        decomposition=_split_with_sizes_copy,
        method=False,
        samples="split_with_sizes_copy",
        out=Out("exact", "partial", reads=_split_pieces),
        notes="split_with_sizes, then a copy of each piece",
    ),
    OpDef(
        "_chunk_cat(Tensor[] tensors, int dim, int num_chunks) -> Tensor",
        Kind.SHAPE,
        _np_chunk_cat,
        decomposition=_chunk_cat,
        method=False,
        samples="chunk_cat",
        out=Out("cast", None),
        notes="each tensor padded along dim to a multiple of num_chunks, viewed as "
        "(..., num_chunks, -1) and concatenated along dim + 1 (FSDP2's all-gather layout)",
    ),
    OpDef(
        "sum_to_size(Tensor input, int[] size) -> Tensor",
        Kind.REDUCTION,
        _np_sum_to_size,
        promotion=Promotion.BOOL_TO_LONG,
        decomposition=_sum_to_size,
        function=False,
        varargs="size",
        samples="sum_to_size",
        out=None,
        notes="sums the leading dims and the dims size makes 1 (the reverse of expand); "
        "like sum, bool and integers give int64, except that a size equal to input's shape "
        "returns input itself, as in PyTorch",
    ),
]
