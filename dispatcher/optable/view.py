"""Views: implemented by the core (metadata only), so every device has them."""

from __future__ import annotations

import math

import numpy as np

import ember

from ..kinds import view as run
from ..opdef import Kind, OpDef

VIEW_ARGS = "none: the core computes shape, strides and offset over the same storage"


def view_op(schema, runner, ref, **kw) -> OpDef:
    return OpDef(
        schema,
        Kind.VIEW,
        ref,
        runner=runner,
        samples=kw.pop("samples", "view"),
        kernel_args=VIEW_ARGS,
        **kw,
    )


def _np_narrow(x, dim, start, length):
    start = start + x.shape[dim] if start < 0 else start
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, start + length)
    return x[tuple(index)]


def _np_slice(x, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _np_squeeze(x, dim=None):
    if dim is None or not x.ndim:  # a 0-d tensor takes dim 0 or -1 and stays as it is
        return np.squeeze(x)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(d for d in dims if x.shape[d] == 1)
    return np.squeeze(x, axis=dims) if dims else x


def _np_flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return x.reshape(1)
    end = end_dim % x.ndim
    start = start_dim % x.ndim
    # The flattened size spelt out: numpy cannot infer a -1 among 0 elements.
    return x.reshape(x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :])


def _np_unflatten(x, dim, sizes):
    d = dim % x.ndim
    known = math.prod(s for s in sizes if s != -1)
    sizes = tuple(x.shape[d] // known if s == -1 else s for s in sizes)  # -1 within dim d only
    return x.reshape(x.shape[:d] + sizes + x.shape[d + 1 :])


def _np_unfold(x, dimension, size, step):
    if not x.ndim:  # PyTorch: the window alone (of 0 or 1 element)
        return x.reshape(1)[:size]
    dimension %= x.ndim  # a negative one would name the windows' dim below
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dimension)
    index = [slice(None)] * windows.ndim
    index[dimension] = slice(None, None, step)
    return windows[tuple(index)]


def _np_swapaxes(x, dim0, dim1):
    return np.swapaxes(x, dim0, dim1) if x.ndim else x  # a 0-d tensor takes dims 0 and -1


def _swap(x, dim0, dim1):
    return ember.transpose(x, dim0, dim1)


def _unbind(x, dim=0):
    if not x.ndim:
        raise IndexError("unbind(): Dimension specified as 0 but tensor has no dimensions")
    return tuple(ember.select(x, dim, i) for i in range(x.shape[dim]))


def split_sizes(length: int, split_size_or_sections, dim: int = 0) -> list:
    """The lengths of split's pieces of dim ``dim``, ``length`` long (autograd's formula reads
    them)."""
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and length:
            raise RuntimeError(f"split(): split_size must be positive, got {step}")
        return [min(step, length - start) for start in range(0, length, step)] or [0]
    sizes = list(split_size_or_sections)
    if sum(sizes) != length:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's "
            f"size at dimension {dim}), but got split_sizes={sizes}"
        )
    return sizes


def chunk_sizes(length: int, chunks: int, dim: int = 0) -> list:
    """The lengths of chunk's pieces: PyTorch's chunk is a split by ceil(length / chunks), or
    ``chunks`` empty pieces of an empty dim (a split of size 0 would give one)."""
    return split_sizes(length, -(-length // chunks), dim) if length else [0] * chunks


def _split(x, split_size_or_sections, dim=0):
    out, start = [], 0
    for size in split_sizes(x.shape[dim], split_size_or_sections, dim):
        out.append(ember.narrow(x, dim, start, size))
        start += size
    return tuple(out)


def _chunk(x, chunks, dim=0):
    if not x.ndim:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    return _split(x, chunk_sizes(x.shape[dim], chunks, dim), dim)


ROWS = [
    view_op(
        "view(Tensor input, int[] size) -> Tensor",
        run.view,
        lambda x, s: x.reshape(s),
        varargs="size",
        function=False,
    ),
    view_op(
        "reshape(Tensor input, int[] shape) -> Tensor",
        run.reshape,
        lambda x, s: x.reshape(s),
        varargs="shape",
    ),
    view_op(
        "permute(Tensor input, int[] dims) -> Tensor", run.permute, np.transpose, varargs="dims"
    ),
    view_op("transpose(Tensor input, int dim0, int dim1) -> Tensor", run.transpose, _np_swapaxes),
    view_op("t(Tensor input) -> Tensor", run.t, lambda x: x.T),
    view_op(
        "expand(Tensor input, int[] size) -> Tensor",
        run.expand,
        lambda x, s: np.broadcast_to(
            x, tuple(a if a != -1 else b for a, b in zip(s, (1,) * (len(s) - x.ndim) + x.shape))
        ),
        varargs="size",
        function=False,
    ),
    view_op(
        "narrow(Tensor input, int dim, int start, int length) -> Tensor", run.narrow, _np_narrow
    ),
    view_op(
        "slice(Tensor input, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",
        run.slice_,
        _np_slice,
        function=False,
        method=False,
        notes="basic indexing x[a:b:c] along one dim",
    ),
    view_op(
        "select(Tensor input, int dim, int index) -> Tensor",
        run.select,
        lambda x, d, i: np.take(x, i, axis=d),
    ),
    view_op("squeeze(Tensor input, int[]? dim=None) -> Tensor", run.squeeze, _np_squeeze),
    view_op(
        "unsqueeze(Tensor input, int dim) -> Tensor",
        run.unsqueeze,
        lambda x, d: np.expand_dims(x, d),
    ),
    view_op(
        "flatten(Tensor input, int start_dim=0, int end_dim=-1) -> Tensor", run.flatten, _np_flatten
    ),
    view_op(
        "unflatten(Tensor input, int dim, int[] sizes) -> Tensor",
        run.unflatten,
        _np_unflatten,
    ),
    view_op(
        "as_strided(Tensor input, int[] size, int[] stride, int? storage_offset=None) -> Tensor",
        run.as_strided,
        None,
        samples="as_strided",
    ),
    view_op(
        "diagonal(Tensor input, int offset=0, int dim1=0, int dim2=1) -> Tensor",
        run.diagonal,
        np.diagonal,
    ),
    view_op(
        "movedim(Tensor input, int[] source, int[] destination) -> Tensor",
        run.movedim,
        lambda x, s, d: np.moveaxis(x, s, d) if x.ndim else x,
    ),
    view_op(
        "unfold(Tensor input, int dimension, int size, int step) -> Tensor",
        run.unfold,
        _np_unfold,
        function=False,
    ),
    view_op("detach(Tensor input) -> Tensor", run.detach, lambda x: x, differentiable=False),
    OpDef(
        "swapaxes(Tensor input, int axis0, int axis1) -> Tensor",
        Kind.VIEW,
        _np_swapaxes,
        decomposition=_swap,
        samples="view",
    ),
    OpDef(
        "swapdims(Tensor input, int dim0, int dim1) -> Tensor",
        Kind.VIEW,
        _np_swapaxes,
        decomposition=_swap,
        samples="view",
    ),
    OpDef(
        "unbind(Tensor input, int dim=0) -> Tensor[]",
        Kind.VIEW,
        lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)),
        decomposition=_unbind,
        samples="view",
    ),
    OpDef(
        "split(Tensor input, int[] split_size_or_sections, int dim=0) -> Tensor[]",
        Kind.VIEW,
        None,
        decomposition=_split,
        samples="split",
    ),
    OpDef(
        "chunk(Tensor input, int chunks, int dim=0) -> Tensor[]",
        Kind.VIEW,
        None,
        decomposition=_chunk,
        samples="split",
    ),
]
