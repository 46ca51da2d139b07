"""Runners for reductions and scans.

Kernels see the input and an output of the same rank whose reduced dims have size 1 (the keepdim
shape), plus the sorted tuple of reduced dims: ``kernel(out, x, dims)``. The runner squeezes the
result afterwards when ``keepdim`` is False, so kernels never deal with rank changes.
"""

from __future__ import annotations

import math

from ember import _dtype as dt
from ember._tensor import Tensor, empty, make

from ..opdef import Promotion
from ._common import cast, contiguous, unsupported_dtype, wrap_dim, wrap_dims


def _check_tensor(op, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(x).__name__}")


def result_dtype(op, x_dtype, dtype=None):
    if dtype is not None:
        return dtype
    kind = op.promotion
    if kind is Promotion.BOOL_TO_LONG and x_dtype.category < dt.FLOATING:
        return dt.int64
    if kind is Promotion.ALWAYS_BOOL:
        # all/any keep uint8 (PyTorch's legacy byte masks); every other input gives bool
        return dt.uint8 if x_dtype is dt.uint8 and op.info.get("keeps_uint8") else dt.bool_
    if kind is Promotion.LONG:
        return dt.int64
    if kind is Promotion.UINT64:
        return dt.uint64
    if kind is Promotion.FLOAT_ONLY and x_dtype.category < dt.FLOATING:
        raise RuntimeError(
            f"{op.name}(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {x_dtype.name}"
        )
    return x_dtype


def no_dims(dim) -> bool:
    """Whether ``dim`` is None or an empty list or tuple: PyTorch reduces every dim for those
    (all and any reduce none for an empty one)."""
    return dim is None or (isinstance(dim, (list, tuple)) and not dim)


def reduced_dims(dim, ndim: int, op_name: str, empty_is_every: bool = True) -> tuple:
    """The sorted dims a reduction folds; None, [] and () mean every dim (with
    ``empty_is_every`` False, [] and () mean none). A 0-d tensor accepts dim 0 or -1 (PyTorch)
    but has no dim to fold, so kernels and formulas never index its shape."""
    if no_dims(dim):
        dim = None if dim is None or empty_is_every else ()
    dims = wrap_dims(dim, ndim, op_name)
    return dims if ndim else ()


def squeeze_dims(t: Tensor, dims: tuple) -> Tensor:
    """A view of ``t`` without the (size-1) ``dims``."""
    shape = tuple(s for i, s in enumerate(t._shape) if i not in dims)
    stride = tuple(s for i, s in enumerate(t._stride) if i not in dims)
    return make(t._storage, shape, stride, t._offset, t._dtype, t._contig)


def _check_nonempty(op, x: Tensor, dim, dims: tuple) -> None:
    """An op without an identity (amax, amin) refuses to fold an empty dim, as PyTorch does:
    a RuntimeError when no dim was named, else an IndexError naming the dim."""
    if op.info.get("identity", True):
        return
    if no_dims(dim) and 0 in x._shape:
        raise RuntimeError(
            f"{op.name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
            f"the reduction dim with the 'dim' argument. (input shape {list(x._shape)})"
        )
    for d in dims:
        if x._shape[d] == 0:
            raise IndexError(
                f"{op.name}(): Expected reduction dim {d} to have non-zero size. (input shape "
                f"{list(x._shape)}; the operation has no identity)"
            )


def reduce(op, x, dim=None, keepdim=False, dtype=None):
    """sum, prod, amax, amin, all, any: ``kernel(out, x, dims)``."""
    _check_tensor(op, x)
    if x._dtype not in op.dtypes:
        raise unsupported_dtype(op, x._dtype)
    dims = reduced_dims(dim, len(x._shape), op.name, op.info.get("empty_dims_reduce", True))
    _check_nonempty(op, x, dim, dims)
    out_dtype = result_dtype(op, x._dtype, dtype)
    if dtype is not None and x._dtype is not dtype:
        x = cast(x, dtype)
    keep_shape = tuple(1 if i in dims else s for i, s in enumerate(x._shape))
    dev = x._storage.device
    kernel = op.kernel(dev.type, x._dtype)
    if kernel is None:
        return op.decomposition(x, dim, keepdim, dtype)
    # Kernels of all/any write bool; a uint8 result (see result_dtype) is cast from it.
    wrote = dt.bool_ if op.promotion is Promotion.ALWAYS_BOOL else out_dtype
    out = empty(keep_shape, wrote, dev)
    kernel(out, x, dims)
    out = out if wrote is out_dtype else cast(out, out_dtype)
    return out if keepdim else squeeze_dims(out, dims)


def reduce_with_indices(op, x, dim, keepdim=False):
    """max/min along one dim: ``kernel(values, indices, x, dim)``."""
    _check_tensor(op, x)
    if x._dtype not in op.dtypes:
        raise unsupported_dtype(op, x._dtype)
    d = wrap_dim(dim, len(x._shape), op.name)
    if x._shape and x._shape[d] == 0:
        raise IndexError(
            f"{op.name}(): Expected reduction dim {d} to have non-zero size. (input shape "
            f"{list(x._shape)})"
        )
    keep_shape = tuple(1 if i == d else s for i, s in enumerate(x._shape))
    dev = x._storage.device
    kernel = op.kernel(dev.type, x._dtype)
    values = empty(keep_shape, x._dtype, dev)
    indices = empty(keep_shape, dt.int64, dev)
    kernel(values, indices, x, d)
    if not keepdim and x._shape:
        values, indices = squeeze_dims(values, (d,)), squeeze_dims(indices, (d,))
    from ember.return_types import ValuesIndices

    return ValuesIndices(values, indices)


def arg_reduce(op, x, dim=None, keepdim=False):
    """argmax/argmin: ``kernel(out_int64, x, dim)``; dim=None flattens first."""
    _check_tensor(op, x)
    if x._dtype not in op.dtypes:
        raise unsupported_dtype(op, x._dtype)
    if dim is None:
        if math.prod(x._shape) == 0:
            raise IndexError(
                f"{op.name}(): Expected reduction dim to be specified for input.numel() == 0. "
                f"(input shape {list(x._shape)})"
            )
        flat = contiguous(x)
        flat = make(flat._storage, (math.prod(x._shape),), (1,), flat._offset, x._dtype, True)
        out = arg_reduce(op, flat, 0, False)
        if keepdim:
            ones = (1,) * len(x._shape)
            return make(out._storage, ones, (1,) * len(ones), out._offset, out._dtype, True)
        return out
    d = wrap_dim(dim, len(x._shape), op.name)
    if x._shape and x._shape[d] == 0:
        raise IndexError(
            f"{op.name}(): Expected reduction dim {d} to have non-zero size. (input shape "
            f"{list(x._shape)})"
        )
    keep_shape = tuple(1 if i == d else s for i, s in enumerate(x._shape))
    dev = x._storage.device
    out = empty(keep_shape, dt.int64, dev)
    op.kernel(dev.type, x._dtype)(out, x, d)
    return out if keepdim or not x._shape else squeeze_dims(out, (d,))


def scan(op, x, dim, dtype=None):
    """cumsum/cumprod: ``kernel(out, x, dim)`` with out of x's shape."""
    _check_tensor(op, x)
    d = wrap_dim(dim, len(x._shape), op.name)
    out_dtype = result_dtype(op, x._dtype, dtype)
    if x._dtype is not out_dtype:
        x = cast(x, out_dtype)
    if out_dtype not in op.dtypes:  # a NotImplementedError: Op.refused may run it in a twin
        raise unsupported_dtype(op, out_dtype)
    dev = x._storage.device
    out = empty(x._shape, out_dtype, dev)
    op.kernel(dev.type, out_dtype)(out, x, d)
    return out
