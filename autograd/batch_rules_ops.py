"""Explicit batching rules: the ops whose row does not say enough to derive one.

Views that take a size (the batch size joins it), ops whose tensor arguments must all be
batched alike (gather, scatter, cat), matrix products (one batched operand folds its batch into
the rows or columns, two use bmm), and the ops that cannot be batched at all (dynamic shapes).
"""

from __future__ import annotations

import ember as E
from ember.dispatcher.optable import OPS

from .batch_rules import (
    batch_size,
    check_inplace,
    elementwise,
    full_args,
    loop,
    physical,
    shift,
    wrap_dim,
    wrap_result,
)
from .batched import peel, wrap


# ---- views with sizes -----------------------------------------------------------------------
def _sized_view(op, args, level: int):
    """view/reshape: the batch size leads the requested size."""
    x, _ = peel(args[0], level)
    size = args[1]
    size = [size] if isinstance(size, int) else list(size)
    return wrap(op(x, [x._shape[0], *size]), level)


def _permute(op, args, level: int):
    x, _ = peel(args[0], level)
    return wrap(op(x, [0, *shift(list(args[1]), len(args[0]._shape), op)]), level)


def _expand(op, args, level: int):
    x, _ = peel(args[0], level)
    size = list(args[1])
    for _ in range(len(size) - (len(x._shape) - 1)):
        x = x.unsqueeze(1)
    return wrap(op(x, [x._shape[0], *size]), level)


def _t(op, args, level: int):
    x, _ = peel(args[0], level)
    rank = len(args[0]._shape)
    if rank > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {rank}D")
    return wrap(x.transpose(1, 2) if rank == 2 else x.view(x._shape), level)


def _squeeze(op, args, level: int):
    x, _ = peel(args[0], level)
    shape = args[0]._shape
    dim = args[1] if len(args) > 1 else None
    if dim is None:
        dims = [i + 1 for i, size in enumerate(shape) if size == 1]
    else:
        dims = shift(dim if isinstance(dim, (list, tuple)) else [dim], len(shape), op)
    return wrap(op(x, dims), level)


def _unsqueeze(op, args, level: int):
    x, _ = peel(args[0], level)
    dim = wrap_dim(args[1], len(args[0]._shape) + 1, op) + 1
    return wrap(op(x, dim), level)


def _flatten(op, args, level: int):
    x, _ = peel(args[0], level)
    full = full_args(op, args)
    rank = len(args[0]._shape)
    if rank == 0:
        return wrap(x.reshape(x._shape[0], 1), level)
    return wrap(op(x, shift(full[1], rank, op), shift(full[2], rank, op)), level)


def _unflatten(op, args, level: int):
    x, _ = peel(args[0], level)
    return wrap(op(x, shift(args[1], len(args[0]._shape), op), args[2]), level)


def _as_strided(op, args, level: int):
    """Each sample's view starts where its sample starts: sample b reads from the given offset
    plus b batch strides (its own offset when none is given), as if each were its own tensor."""
    full = full_args(op, args)
    x, _ = peel(full[0], level)
    offset = x._offset if full[3] is None else full[3]
    size = [x._shape[0], *full[1]]
    stride = [x._stride[0], *full[2]]
    return wrap(op(x, size, stride, offset), level)


def _argextreme(op, args, level: int):
    """argmax/argmin: no dim means over the flattened sample."""
    x, _ = peel(args[0], level)
    full = full_args(op, args)
    rank = len(args[0]._shape)
    dim, keepdim = full[1], full[2]
    if dim is None:
        out = op(x.reshape(x._shape[0], -1), 1, False)
        if keepdim:
            out = out.reshape((x._shape[0],) + (1,) * rank)
        return wrap(out, level)
    if rank == 0:
        return wrap(op(x.unsqueeze(1), 1, False), level)
    return wrap(op(x, shift(dim, rank, op), keepdim), level)


# ---- tensors batched alike --------------------------------------------------------------------
def _cat(op, args, level: int):
    full = full_args(op, args)
    tensors, dim = full[0], full[1]
    size = batch_size(level)
    ranks = [len(t._shape) for t in tensors if t._shape != (0,)]
    rank = ranks[0] if ranks else 1
    kept = [t for t in tensors if rank == 1 or t._shape != (0,)]  # legacy empty 1-d: skipped
    parts = [physical(t, level, size) for t in kept]
    return wrap(op(parts, shift(dim, rank, op)), level)


def _gather(op, args, level: int):
    size = batch_size(level)
    full = full_args(op, args)
    x, dim, index = full[0], full[1], full[2]
    rank = len(x._shape)
    out = op(physical(x, level, size), shift(dim, rank, op), physical(index, level, size))
    return wrap(out, level)


def _scatter(op, args, level: int):
    """scatter/scatter_add (and their in-place forms): every operand batched alike."""
    check_inplace(op, args, level)
    size = batch_size(level)
    x, dim, index, src = args[0], args[1], args[2], args[3]
    src = physical(src, level, size) if hasattr(src, "_shape") else src
    out = op(
        physical(x, level, size), shift(dim, len(x._shape), op), physical(index, level, size), src
    )
    return x if op.mutates else wrap(out, level)


def _index_select(op, args, level: int):
    x, dim, index = args[0], args[1], args[2]
    rank = len(x._shape)
    if not peel(index, level)[1]:
        value, _ = peel(x, level)
        return wrap(op(value, shift(dim, rank, op), index), level)
    if rank == 0:
        return loop(op, args, level)
    # Each sample's own indices: a gather along the dim, the indices spread over the others.
    size = batch_size(level)
    moved = shift(dim, rank, op)
    value = physical(x, level, size)
    indices = physical(index, level, size).reshape(size, -1).to(E.int64)
    spread = [size] + [1] * rank
    spread[moved] = indices.shape[1]
    target = list(value.shape)
    target[moved] = indices.shape[1]
    return wrap(OPS["gather"](value, moved, indices.view(spread).expand(target)), level)


def _index_add(op, args, level: int):
    full = full_args(op, args)
    x, dim, index, source, alpha = full
    if peel(index, level)[1]:
        return loop(op, args, level)
    check_inplace(op, args, level)
    size = batch_size(level)
    shifted = shift(dim, len(x._shape), op)
    out = op(physical(x, level, size), shifted, index, physical(source, level, size), alpha)
    return x if op.mutates else wrap(out, level)


def _take(op, args, level: int):
    x, index = args[0], args[1]
    size = batch_size(level)
    numel = 1
    for s in x._shape:
        numel *= s
    flat = physical(x, level, size).reshape(size, -1)
    value, batched = peel(index, level)
    value = OPS["where"](value < 0, value + numel, value)  # take counts from the end too
    if batched:
        out = flat.gather(1, value.reshape(size, -1))
    else:
        out = flat.index_select(1, value.reshape(-1))
    return wrap(out.reshape((size, *index._shape)), level)


def _dynamic_shape(op, args, level: int):
    raise RuntimeError(
        "vmap: We do not support batching operators that can output dynamic shape. Attempted "
        f"to vmap over aten::{op.name}. Please file an issue at "
        "https://github.com/pytorch/pytorch/issues if you need this feature."
    )


# ---- matrix products --------------------------------------------------------------------------
def _mm(op, args, level: int):
    a, b = args[0], args[1]
    for name, t in (("self", a), ("mat2", b)):
        if len(t._shape) != 2:
            raise RuntimeError(f"{name} must be a matrix")
    pa, batched_a = peel(a, level)
    pb, batched_b = peel(b, level)
    if batched_a and batched_b:
        return wrap(OPS["bmm"](pa, pb), level)
    if batched_a:  # the batch joins the rows
        size, n, k = pa._shape
        m = pb._shape[1]
        return wrap(OPS["mm"](pa.reshape(size * n, k), pb).view(size, n, m), level)
    size, k, m = pb._shape  # the batch joins the columns
    cols = pb.permute(1, 0, 2).reshape(k, size * m)
    out = OPS["mm"](pa, cols).view(pa._shape[0], size, m)
    return wrap(out.permute(1, 0, 2), level)


def _bmm(op, args, level: int):
    a, b = args[0], args[1]
    for name, t in (("batch1", a), ("batch2", b)):
        if len(t._shape) != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    size = batch_size(level)
    pa, pb = physical(a, level, size), physical(b, level, size)
    _, groups, n, k = pa._shape
    m = pb._shape[3]
    out = OPS["bmm"](pa.reshape(size * groups, n, k), pb.reshape(size * groups, k, m))
    return wrap(out.view(size, groups, n, m), level)


class _FoldBatch:
    """Ops on ``(N, ...)`` or unbatched ``(...)`` inputs (pooling, im2col): a logical unbatched
    input is already the batched form physically; a logical batched one folds the vmap batch
    into N and unfolds it from every output."""

    def __init__(self, unbatched_rank: int):
        self.rank = unbatched_rank

    def __call__(self, op, args, level: int):
        x, _ = peel(args[0], level)
        if len(args[0]._shape) == self.rank:
            return wrap_result(op(x, *args[1:]), level)
        size, n = x._shape[0], x._shape[1]
        out = op(x.reshape((size * n, *x._shape[2:])), *args[1:])
        if isinstance(out, tuple):
            return tuple(wrap(o.view((size, n, *o._shape[1:])), level) for o in out)
        return wrap(out.view((size, n, *out._shape[1:])), level)


def _layer_norm(op, args, level: int):
    full = full_args(op, args)
    if any(peel(t, level)[1] for t in full[2:4] if t is not None):
        return op.decomposition(*full)  # per-sample affine parameters: in ember ops
    x, _ = peel(full[0], level)
    return wrap(op(x, *full[1:]), level)


def _per_sample(op, args, level: int):
    """Ops with no vectorised rule yet, run once per sample (with the fallback's warning)."""
    return loop(op, args, level)


EXPLICIT = {
    "view": _sized_view,
    "reshape": _sized_view,
    "expand": _expand,
    "permute": _permute,
    "t": _t,
    "squeeze": _squeeze,
    "unsqueeze": _unsqueeze,
    "flatten": _flatten,
    "unflatten": _unflatten,
    "as_strided": _as_strided,
    "argmax": _argextreme,
    "argmin": _argextreme,
    "cat": _cat,
    "gather": _gather,
    "scatter": _scatter,
    "scatter_add": _scatter,
    "index_select": _index_select,
    "index_add": _index_add,
    "take": _take,
    "put_": _per_sample,
    "searchsorted": _per_sample,
    "nonzero": _dynamic_shape,
    "masked_select": _dynamic_shape,
    "_unique2": _dynamic_shape,
    "copy_": elementwise,
    "fill_": elementwise,
    "layer_norm": _layer_norm,
    "im2col": _FoldBatch(3),
    "col2im": _FoldBatch(2),
    "max_pool2d_with_indices": _FoldBatch(3),
    "mm": _mm,
    "bmm": _bmm,
}

__all__ = ["EXPLICIT", "wrap_result"]
