"""Data movement and indexing: copies, cat/stack, gather/scatter, sort, nonzero..."""

from __future__ import annotations

import numpy as np

import ember

from ..kinds import copy as run_copy
from ..kinds import index as run_index
from ..kinds import shape as run_shape
from ..opdef import DTYPES_NUMERIC, OUT_EXACT, Kind, OpDef, Out, Promotion
from .fill import fill_value

CORE = "none: implemented by the core over copy_ (and narrow views)"
OUT_JOIN = Out("cast", "any")  # cat and friends: out may not share memory with any input
OUT_INTO_COPY = Out("exact", "partial")  # scatter and index_add: out may be the input itself


def _clone(x):
    return ember.ops._to_copy(x)


def _contiguous(x):
    return x if x.is_contiguous() else ember.ops._to_copy(x)


def _zero_(x):
    return x.fill_(0)


def _stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    dim = dim if dim >= 0 else dim + len(shape) + 1
    return ember.cat([t.unsqueeze(dim) for t in tensors], dim)


def _hstack(tensors):
    tensors = list(tensors)
    return ember.cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def _vstack(tensors):
    return ember.cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


def _roll(x, shifts, dims=None):
    if dims is None:
        return _roll(x.flatten(), shifts, (0,)).view(x.shape)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll(): shifts and dims must align, got {shifts} and {dims}")
    for shift, dim in zip(shifts, dims):
        size = x.shape[dim]
        if size == 0:
            continue
        shift %= size
        if shift:
            x = ember.cat([x.narrow(dim, size - shift, shift), x.narrow(dim, 0, size - shift)], dim)
    return x


def _tri_mask(x, diagonal, lower):
    rows, cols = x.shape[-2], x.shape[-1]
    r = ember.arange(rows, device=x.device).unsqueeze(1)
    c = ember.arange(cols, device=x.device).unsqueeze(0)
    return (c - r <= diagonal) if lower else (c - r >= diagonal)


def _tril(x, diagonal=0):
    return ember.where(
        _tri_mask(x, diagonal, True), x, ember.zeros((), dtype=x.dtype, device=x.device)
    )


def _triu(x, diagonal=0):
    return ember.where(
        _tri_mask(x, diagonal, False), x, ember.zeros((), dtype=x.dtype, device=x.device)
    )


def _repeat(x, repeats):
    repeats = tuple(repeats)
    if len(repeats) < x.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            "tensor"
        )
    x = x.reshape((1,) * (len(repeats) - x.ndim) + tuple(x.shape))
    # A size-1 axis before each axis, broadcast to the repeat count, then merged with it.
    interleaved, expanded = [], []
    for size, rep in zip(x.shape, repeats):
        interleaved += [1, size]
        expanded += [rep, size]
    return (
        x.reshape(interleaved).expand(expanded).reshape([s * r for s, r in zip(x.shape, repeats)])
    )


def _tile(x, dims):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)  # x.tile(2), as PyTorch
    if len(dims) < x.ndim:
        dims = (1,) * (x.ndim - len(dims)) + dims
    return _repeat(x, dims)


def _repeat_interleave(x, repeats=None, dim=None, output_size=None):
    if repeats is None:  # repeat_interleave(repeats): each position, repeats[i] times
        return _repeated_positions(x, output_size)
    if dim is None:
        x, dim = x.flatten(), 0
    size = x.shape[dim] if x.ndim else 1
    if isinstance(repeats, ember.Tensor):
        _check_repeats(repeats, size, dim)
        if repeats.numel() != 1:
            return ember.index_select(x, dim, _repeated_positions(repeats, output_size))
        repeats = int(repeats.item())  # one count for every position
    if repeats < 0:
        raise RuntimeError(f"repeat_interleave(): Repeats must be non-negative, got {repeats}")
    if output_size is not None and output_size != size * repeats:
        raise RuntimeError(
            f"repeat_interleave: Invalid output_size, expected {size * repeats} but got "
            f"{output_size}"
        )
    index = ember.arange(size, device=x.device).unsqueeze(1).expand(size, repeats)
    return ember.index_select(x, dim, index.flatten())


def _check_repeats(repeats, size: int, dim: int) -> None:
    if repeats.dtype not in (ember.int32, ember.int64):
        raise NotImplementedError(
            f'"repeat_interleave" not implemented for {repeats.dtype.name} repeats (int32 or '
            "int64 only)"
        )
    if repeats.ndim > 1:
        raise RuntimeError(
            f"repeat_interleave(): repeats must be 0-dim or 1-dim tensor, got shape "
            f"{list(repeats.shape)}"
        )
    if repeats.numel() not in (1, size):
        raise RuntimeError(
            f"repeat_interleave(): repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {repeats.numel()} and input.size({dim}) = {size}"
        )


def _repeated_positions(repeats, output_size=None):
    """``[0] * repeats[0] + [1] * repeats[1] + ...``: where each output position reads from."""
    if repeats.ndim != 1:
        raise RuntimeError(
            f"repeat_interleave only accept 1D vector as repeat, got shape {list(repeats.shape)}"
        )
    if repeats.dtype not in (ember.int32, ember.int64):
        raise NotImplementedError(f'"repeat_interleave" not implemented for {repeats.dtype.name}')
    if repeats.numel() and bool((repeats < 0).any()):
        raise RuntimeError("repeat_interleave(): repeats can not be negative")
    ends = ember.cumsum(repeats, 0)
    total = int(ends[-1].item()) if repeats.numel() else 0
    if output_size is not None and output_size != total:
        raise RuntimeError(
            f"repeat_interleave(): allocated size does not match required size: output_size "
            f"{output_size}, repeats sum to {total}"
        )
    steps = ember.arange(total, dtype=ends.dtype, device=repeats.device)
    return ember.searchsorted(ends, steps, right=True)


def _np_repeat_interleave(x, repeats=None, dim=None, output_size=None):
    if repeats is None:
        return np.repeat(np.arange(len(x)), x)
    return np.repeat(x, np.asarray(repeats).reshape(-1) if np.ndim(repeats) else repeats, dim)


def _masked_fill(x, mask, value):
    if isinstance(mask, ember.Tensor) and mask.dtype is not ember.bool:
        raise RuntimeError(
            "masked_fill(): masked_fill_ only supports boolean masks, but got mask with dtype "
            f"{mask.dtype.name} (shape {list(mask.shape)})"
        )
    out = ember.where(mask, fill_value("masked_fill", x, value), x)
    if isinstance(value, ember.Tensor):  # PyTorch's Tensor overload: a node over x and value
        from ember.autograd.graph_names import present

        return present(out, "MaskedFillBackward1", x, value, saved={"mask": mask})
    return out


def _masked_select(x, mask):
    x, mask = ember.broadcast_tensors(x, mask)
    return ember.take(x.contiguous(), ember.nonzero(mask.flatten()).flatten())


def _argsort(x, dim=-1, descending=False, stable=False):
    return ember.sort(x, dim, descending, stable=stable).indices


def _topk(x, k, dim=-1, largest=True, sorted=True):
    from ember.return_types import ValuesIndices

    size = x.shape[dim] if x.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk(): selected index k ({k}) out of range (dimension size {size})")
    if x.ndim == 0:  # sort and narrow need a dim: take the top of the 1-element vector
        values, indices = _topk(x.reshape(1), k, 0, largest, sorted)
        return ValuesIndices(values.reshape(()), indices.reshape(())) if k else (values, indices)
    values, indices = ember.sort(x, dim, largest, stable=True)

    return ValuesIndices(values.narrow(dim, 0, k), indices.narrow(dim, 0, k))


def _np_sort(x, dim=-1, descending=False, stable=False):
    """Stable sort; descending keeps ties in input order (negating would wrap unsigned ints)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    if descending:
        last = x.shape[dim] - 1
        order = np.flip(last - np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
    else:
        order = np.argsort(x, axis=dim, kind="stable")
    return np.take_along_axis(x, order, axis=dim), order


def _np_scatter(x, dim, index, src, add=False):
    out = x.copy()
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        if add:
            out[tuple(target)] += src[pos]
        else:
            out[tuple(target)] = src[pos]
    return out


def _np_index_add(x, dim, index, source, alpha=1):
    out = x.copy()
    moved = np.moveaxis(out, dim, 0)
    np.add.at(moved, index, np.moveaxis(source, dim, 0) * alpha)
    return out


def _np_put(x, index, source, accumulate=False):
    out = x.copy()
    flat = out.reshape(-1)
    if accumulate:
        np.add.at(flat, index.reshape(-1), source.reshape(-1))
    else:
        flat[index.reshape(-1)] = source.reshape(-1)
    return out


def _np_searchsorted(seq, values, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side)
    flat_seq = seq.reshape(-1, seq.shape[-1])
    flat_val = values.reshape(-1, values.shape[-1])
    rows = [np.searchsorted(s, v, side=side) for s, v in zip(flat_seq, flat_val)]
    return np.stack(rows).reshape(values.shape)


ROWS = [
    OpDef(
        "copy_(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
        Kind.COPY,
        None,
        runner=run_copy.copy_,
        function=False,
        samples="copy",
        kernel_args="(dst, src): src broadcast to dst's shape, any dtypes, same device",
    ),
    OpDef(
        "_to_copy(Tensor input, *, ScalarType? dtype=None, Device? device=None, "
        "bool non_blocking=False) -> Tensor",
        Kind.COPY,
        lambda x, dtype=None, device=None, non_blocking=False: (
            x.astype(dtype.np) if dtype is not None else x.copy()
        ),
        runner=run_copy.to_copy,
        core=True,
        function=False,
        method=False,
        samples="to_copy",
        kernel_args=CORE,
    ),
    OpDef("clone(Tensor input) -> Tensor", Kind.COPY, np.copy, decomposition=_clone),
    OpDef(
        "contiguous(Tensor input) -> Tensor",
        Kind.COPY,
        lambda x: np.array(x, order="C"),  # np.ascontiguousarray makes 0-d arrays 1-d
        decomposition=_contiguous,
        function=False,
    ),
    OpDef(
        "fill_(Tensor self, Scalar value) -> Tensor",
        Kind.COPY,
        None,
        runner=run_copy.fill_,
        function=False,
        samples="fill",
        kernel_args="(out, value): value a Python scalar",
    ),
    OpDef(
        "zero_(Tensor self) -> Tensor",
        Kind.COPY,
        None,
        decomposition=_zero_,
        function=False,
        differentiable=False,
        samples="fill",
    ),
    OpDef(
        "flip(Tensor input, int[] dims) -> Tensor",
        Kind.SHAPE,
        np.flip,
        runner=run_copy.flip,
        core=True,
        varargs="dims",
        kernel_args=CORE,
    ),
    OpDef(
        "roll(Tensor input, int[] shifts, int[]? dims=None) -> Tensor",
        Kind.SHAPE,
        lambda x, shifts, dims=None: np.roll(x, shifts, dims),
        decomposition=_roll,
    ),
    OpDef(
        "cat(Tensor[] tensors, int dim=0) -> Tensor",
        Kind.SHAPE,
        np.concatenate,
        runner=run_shape.cat,
        core=True,
        method=False,
        samples="cat",
        out=OUT_JOIN,
        kernel_args=CORE,
    ),
    OpDef(
        "stack(Tensor[] tensors, int dim=0) -> Tensor",
        Kind.SHAPE,
        np.stack,
        decomposition=_stack,
        runner=run_shape.stack,
        method=False,
        samples="cat",
        out=OUT_JOIN,
        kernel_args="(out, tensors, dim): tensors contiguous, of one shape and out's dtype",
    ),
    OpDef(
        "hstack(Tensor[] tensors) -> Tensor",
        Kind.SHAPE,
        np.hstack,
        decomposition=_hstack,
        method=False,
        samples="cat",
        out=OUT_JOIN,
    ),
    OpDef(
        "vstack(Tensor[] tensors) -> Tensor",
        Kind.SHAPE,
        np.vstack,
        decomposition=_vstack,
        method=False,
        samples="cat",
        out=OUT_JOIN,
    ),
    OpDef(
        "tril(Tensor input, int diagonal=0) -> Tensor",
        Kind.SHAPE,
        np.tril,
        decomposition=_tril,
        samples="matrix",
        out=OUT_EXACT,
    ),
    OpDef(
        "triu(Tensor input, int diagonal=0) -> Tensor",
        Kind.SHAPE,
        np.triu,
        decomposition=_triu,
        samples="matrix",
        out=OUT_EXACT,
    ),
    OpDef(
        "repeat(Tensor input, int[] repeats) -> Tensor",
        Kind.SHAPE,
        lambda x, r: np.tile(x, r),
        decomposition=_repeat,
        varargs="repeats",
        function=False,
    ),
    OpDef("tile(Tensor input, int[] dims) -> Tensor", Kind.SHAPE, np.tile, decomposition=_tile),
    OpDef(
        "repeat_interleave(Tensor input, Tensor? repeats=None, int? dim=None, *, "
        "int? output_size=None) -> Tensor",
        Kind.SHAPE,
        _np_repeat_interleave,
        decomposition=_repeat_interleave,
        notes="repeats is a Tensor or an int (PyTorch's overloads); repeat_interleave(repeats) "
        "alone repeats each position repeats[i] times",
    ),
    OpDef(
        # One row for PyTorch's two overloads: value a number (masked_fill.Scalar) or a 0-d
        # tensor (masked_fill.Tensor, differentiable in it), as where's and pow's rows take both.
        "masked_fill(Tensor input, Tensor mask, Tensor value) -> Tensor",
        Kind.INDEX,
        lambda x, m, v: np.where(m, v, x),
        runner=run_index.masked_fill,
        decomposition=_masked_fill,
        samples="masked",
        out=None,
    ),
    OpDef(
        "masked_select(Tensor input, Tensor mask) -> Tensor",
        Kind.INDEX,
        lambda x, m: np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape))[
            np.broadcast_to(m, np.broadcast_shapes(x.shape, m.shape))
        ],
        decomposition=_masked_select,
        samples="masked",
    ),
    OpDef(
        "gather(Tensor input, int dim, Tensor index) -> Tensor",
        Kind.INDEX,
        lambda x, d, i: np.take_along_axis(x, i, d),
        runner=run_index.gather,
        samples="gather",
        kernel_args="(out, x, dim, index): out has index's shape; index int64",
    ),
    OpDef(
        "scatter(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
        Kind.INDEX,
        _np_scatter,
        runner=run_index.scatter,
        samples="scatter",
        inplace=True,
        out=OUT_INTO_COPY,
        kernel_args="(out, dim, index, src): writes src into out (a copy of input) in place",
    ),
    OpDef(
        "scatter_add(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
        Kind.INDEX,
        lambda x, d, i, s: _np_scatter(x, d, i, s, add=True),
        runner=run_index.scatter,
        samples="scatter",
        inplace=True,
        out=OUT_INTO_COPY,
        kernel_args="(out, dim, index, src): adds src into out (a copy of input) in place",
    ),
    OpDef(
        "index_select(Tensor input, int dim, Tensor index) -> Tensor",
        Kind.INDEX,
        lambda x, d, i: np.take(x, np.reshape(i, -1), axis=d),  # a 0-d index selects one
        runner=run_index.index_select,
        samples="index_select",
        kernel_args="(out, x, dim, index): index 1-D int64",
    ),
    OpDef(
        "index_add(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> "
        "Tensor",
        Kind.INDEX,
        _np_index_add,
        runner=run_index.index_add,
        samples="index_add",
        inplace=True,
        out=OUT_INTO_COPY,
        kernel_args="(out, dim, index, source, alpha): adds into out (a copy of input)",
    ),
    OpDef(
        "take(Tensor input, Tensor index) -> Tensor",
        Kind.INDEX,
        lambda x, i: np.take(x.reshape(-1), i),
        runner=run_index.take,
        samples="take",
        kernel_args="(out, x, index): index into x's row-major order, any strides of x",
    ),
    OpDef(
        "put_(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
        Kind.INDEX,
        _np_put,
        runner=run_index.put_,
        function=False,
        samples="put",
        kernel_args="(x, index, source, accumulate): writes in place, any strides of x",
    ),
    OpDef(
        "nonzero(Tensor input) -> Tensor",
        Kind.INDEX,
        lambda x: np.argwhere(x),
        promotion=Promotion.LONG,
        runner=run_index.nonzero,
        frontend=True,
        differentiable=False,
        samples="nonzero",
        kernel_args="(out, x): out is [count, ndim] int64, count from count_nonzero",
    ),
    OpDef(
        "sort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> "
        "(Tensor values, Tensor indices)",
        Kind.SORT,
        _np_sort,
        runner=run_index.sort,
        samples="sort",
        kernel_args="(values, indices, x, dim, descending, stable)",
    ),
    OpDef(
        "argsort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
        Kind.SORT,
        lambda *a, **k: _np_sort(*a, **k)[1],
        promotion=Promotion.LONG,
        decomposition=_argsort,
        differentiable=False,
        samples="sort",
        out=None,
    ),
    OpDef(
        "topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True) -> "
        "(Tensor values, Tensor indices)",
        Kind.SORT,
        None,
        decomposition=_topk,
        samples="topk",
    ),
    OpDef(
        "searchsorted(Tensor sorted_sequence, Tensor input, *, bool out_int32=False, "
        "bool right=False, str? side=None, Tensor? sorter=None) -> Tensor",
        Kind.SORT,
        _np_searchsorted,
        promotion=Promotion.LONG,
        dtypes=DTYPES_NUMERIC,
        runner=run_index.searchsorted,
        differentiable=False,
        samples="searchsorted",
        out=OUT_EXACT,
        kernel_args="(out, sorted_sequence, values, right): sequence rows match values rows",
    ),
]
