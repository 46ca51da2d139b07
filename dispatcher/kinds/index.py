"""Runners for gather/scatter, index_select/index_add, take/put_, nonzero, sort, searchsorted.

Index tensors reach kernels as int64 on the data's device; bounds are checked by the kernels
(they report EM_INDEX_OUT_OF_RANGE-style errors), since checking here would read device memory.
Outputs of the scatter family are fresh copies written in place by the kernel
(``kernel(out, dim, index, src, ...)``), so kernels only implement the in-place form.
"""

from __future__ import annotations

import math

from ember import _dtype as dt
from ember._tensor import Tensor, empty, make

from ..overlap import check_none
from ._common import (
    OPS,
    broadcast_shapes,
    cast,
    check_dtypes,
    check_writable,
    common_device,
    expand_to,
    wrap_dim,
)
from ._limits import check_scalar_fits

# PyTorch's index dtypes: int64 only for take/put_, int32 or int64 for the others, each with
# PyTorch's wording.
_LONG_ONLY = ("take", "put_")
_INDEX_MESSAGE = {
    "take": "Expected a long tensor for index, but got {got}",
    "put_": "Expected a long tensor for index, but got {got}",
    "index_select": "Expected dtype int32 or int64 for index, but got {got}",
    "index_add": "Expected dtype int32/int64 for index but got: {got}",
    "index_add_": "Expected dtype int32/int64 for index but got: {got}",
}


def _index_tensor(op, index, device) -> Tensor:
    if not isinstance(index, Tensor):
        raise TypeError(f"{op.name}(): index must be a Tensor, got {type(index).__name__}")
    d = index._dtype
    empty_index = 0 in index._shape  # PyTorch takes an empty index of any dtype
    if d is not dt.int64 and (d is not dt.int32 or op.name in _LONG_ONLY) and not empty_index:
        message = _INDEX_MESSAGE.get(op.name, "Expected dtype int32/int64 for index, but got {got}")
        raise RuntimeError(
            f"{op.name}(): {message.format(got=dt.SCALAR_NAMES[d])} (index of shape "
            f"{list(index._shape)})"
        )
    if index._storage.device is not device:
        raise RuntimeError(
            f"{op.name}(): index is on {index._storage.device} but the input is on {device}"
        )
    return index if index._dtype is dt.int64 else cast(index, dt.int64)


def _check_same_rank(op, x: Tensor, index: Tensor) -> None:
    if len(index._shape) != len(x._shape) and (x._shape or index._shape):
        raise RuntimeError(
            f"{op.name}(): Index tensor must have the same number of dimensions as input tensor "
            f"(input {list(x._shape)}, index {list(index._shape)})"
        )


def _clone(x: Tensor) -> Tensor:
    return cast(x, x._dtype)


def gather(op, x, dim, index):
    d = wrap_dim(dim, len(x._shape), op.name)
    index = _index_tensor(op, index, x._storage.device)
    if 0 in index._shape:  # an empty index gathers nothing, whatever its rank (PyTorch)
        return empty(index._shape, x._dtype, x._storage.device)
    if not x._shape and len(index._shape) == 1:  # a 0-d input is a 1-element vector (PyTorch)
        x = make(x._storage, (1,), (1,), x._offset, x._dtype, True)
    _check_same_rank(op, x, index)
    for i, (a, b) in enumerate(zip(index._shape, x._shape)):
        if i != d and a > b:
            raise RuntimeError(
                f"gather(): Size does not match at dimension {i} expected index "
                f"{list(index._shape)} to be smaller than self {list(x._shape)} apart from "
                f"dimension {d}"
            )
    out = empty(index._shape, x._dtype, x._storage.device)
    op.kernel(x._storage.device.type, x._dtype)(out, x, d, index)
    return out


def scatter(op, x, dim, index, src):
    """scatter / scatter_add: a copy of x with src written (or added) at index along dim."""
    d = wrap_dim(dim, len(x._shape), op.name)
    index = _index_tensor(op, index, x._storage.device)
    if 0 in index._shape:  # nothing to write, whatever the index's rank (PyTorch)
        return _clone(x)
    if not x._shape and len(index._shape) == 1:  # a 0-d input is a 1-element vector (PyTorch)
        vector = make(x._storage, (1,), (1,), x._offset, x._dtype, True)
        return scatter(op, vector, dim, index, src).reshape(())
    _check_same_rank(op, x, index)
    if isinstance(src, Tensor):
        if src._dtype is not x._dtype:
            raise RuntimeError(
                f"{op.name}(): Expected self.dtype to be equal to src.dtype ({x._dtype.name} vs "
                f"{src._dtype.name})"
            )
    else:
        src = OPS["full"](index._shape, src, x._dtype, x._storage.device)
    _check_scatter_shapes(op.name, x, d, index, src)
    out = _clone(x)
    op.kernel(x._storage.device.type, x._dtype)(out, d, index, src)
    return out


def _check_scatter_shapes(name: str, x, dim: int, index, src) -> None:
    """PyTorch's rule: index fits in src everywhere and in self apart from dim."""
    ishape, sshape, oshape = index._shape, src._shape, x._shape
    if len(sshape) != len(ishape):
        raise RuntimeError(
            f"{name}(): Index tensor must have the same number of dimensions as src tensor "
            f"(index {list(ishape)}, src {list(sshape)})"
        )
    if math.prod(ishape) == 0:
        return
    for d, size in enumerate(ishape):
        if size > sshape[d] or (d != dim and size > oshape[d]):
            raise RuntimeError(
                f"{name}(): Expected index {list(ishape)} to be smaller than self {list(oshape)} "
                f"apart from dimension {dim} and to be smaller size than src {list(sshape)}"
            )


def index_select(op, x, dim, index):
    d = wrap_dim(dim, len(x._shape), op.name) if x._shape else 0
    index = _index_tensor(op, index, x._storage.device)
    if len(index._shape) > 1:
        raise IndexError(
            f"index_select(): Index is supposed to be a vector, got {list(index._shape)}"
        )
    n = math.prod(index._shape)
    shape = x._shape[:d] + (n,) + x._shape[d + 1 :] if x._shape else ()
    out = empty(shape, x._dtype, x._storage.device)
    op.kernel(x._storage.device.type, x._dtype)(out, x, d, index.reshape(-1))
    return out


def index_add(op, x, dim, index, source, alpha=1):
    d = wrap_dim(dim, len(x._shape), op.name) if x._shape else 0
    index = _index_tensor(op, index, x._storage.device)
    if source._dtype is not x._dtype:
        source = cast(source, x._dtype)
    out = _clone(x)
    op.kernel(x._storage.device.type, x._dtype)(out, d, index.reshape(-1), source, alpha)
    return out


def take(op, x, index):
    index = _index_tensor(op, index, x._storage.device)
    out = empty(index._shape, x._dtype, x._storage.device)
    op.kernel(x._storage.device.type, x._dtype)(out, x, index)
    return out


def put_(op, x, index, source, accumulate=False):
    """x.view(-1)[index] = source (or +=), for any strides of x: ``kernel(x, index, src, acc)``."""
    check_writable("put_", x)
    check_none(op.name, x, index, "index")
    check_none(op.name, x, source, "source")
    index = _index_tensor(op, index, x._storage.device)
    if not isinstance(source, Tensor):
        source = OPS["full"](index._shape, source, x._dtype, x._storage.device)
    elif math.prod(source._shape) != math.prod(index._shape):
        raise RuntimeError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {math.prod(source._shape)}, index.numel() = "
            f"{math.prod(index._shape)}"
        )
    if source._dtype is not x._dtype:
        source = cast(source, x._dtype)
    if source._shape != index._shape:
        source = OPS["reshape"](source, index._shape)
    op.kernel(x._storage.device.type, x._dtype)(x, index, source, bool(accumulate))
    x._storage.version += 1
    return x


def nonzero(op, x):
    dev = x._storage.device
    count = int(OPS["count_nonzero"](x).item()) if x._shape else int(bool(x.item()))
    out = empty((count, len(x._shape)), dt.int64, dev)
    if count:
        op.kernel(dev.type, x._dtype)(out, x)
    return out


def sort(op, x, dim=-1, descending=False, stable=False):
    from ember.return_types import ValuesIndices

    d = wrap_dim(dim, len(x._shape), op.name) if x._shape else 0
    dev = x._storage.device
    values = empty(x._shape, x._dtype, dev)
    indices = empty(x._shape, dt.int64, dev)
    if math.prod(x._shape):
        op.kernel(dev.type, x._dtype)(values, indices, x, d, bool(descending), bool(stable))
    return ValuesIndices(values, indices)


def searchsorted(op, sorted_sequence, values, out_int32=False, right=False, side=None, sorter=None):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"searchsorted(): side must be 'left' or 'right', got '{side}'")
        if right and side == "left":
            raise RuntimeError("searchsorted(): side='left' contradicts right=True")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = OPS["gather"](sorted_sequence, -1, sorter)
    seq = sorted_sequence
    scalar = not isinstance(values, Tensor)
    if scalar:
        values = OPS["full"]((), values, seq._dtype, seq._storage.device)
    common_device(op.name, (seq, values))
    if values._dtype is not seq._dtype:
        from ..promotion import promote_types

        common = promote_types(seq._dtype, values._dtype)
        seq, values = cast(seq, common), cast(values, common)
    if len(seq._shape) > 1 and seq._shape[:-1] != values._shape[:-1]:
        raise RuntimeError(
            f"searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
            f"of boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq._shape)} and input value tensor {list(values._shape)}"
        )
    dev = seq._storage.device
    out = empty(values._shape, dt.int32 if out_int32 else dt.int64, dev)
    op.kernel(dev.type, seq._dtype)(out, seq, values, bool(right))
    return out


_NUMBERS = (bool, int, float)
# A number of each category as where's kernels take their scalar operand (elementwise.py's
# convention): a float for floating dtypes, an int for integer ones, a bool for bool.
_FILL_NUMBER = {dt.FLOATING: float, dt.INTEGRAL: int, dt.BOOL: bool}


def masked_fill(op, x, mask, value):
    """``where``'s kernel with the number as its scalar operand, ``kernel(out, mask, value,
    x)`` over x and mask broadcast together: no tensor made for the number, no general where
    runner (minGPT's causal mask fill, every attention step). A number the dtype cannot hold
    is refused as the decomposition refuses it; a tensor value, a non-bool mask, another
    device or a dtype where's kernels lack go to the decomposition, which words the errors."""
    if isinstance(x, Tensor) and isinstance(mask, Tensor) and mask._dtype is dt.bool_:
        dtype = x._dtype
        number = _FILL_NUMBER.get(dtype.category)
        dev = x._storage.device
        if number is not None and value.__class__ in _NUMBERS and mask._storage.device is dev:
            try:
                kernel = OPS["where"].kernel(dev.type, dtype)
            except NotImplementedError:  # float8 and the other twins: where's own path
                kernel = None
            if kernel is not None:
                check_scalar_fits("masked_fill", value, dtype)
                shape = x._shape
                if mask._shape != shape:
                    shape = broadcast_shapes(op.name, shape, mask._shape)
                    x, mask = expand_to(x, shape), expand_to(mask, shape)
                out = empty(shape, dtype, dev)
                kernel(out, mask, number(value), x)
                return out
    check_dtypes(op, (x, mask, value))
    return op.decomposition(x, mask, value)


# vmap, forward AD and the compiler's traces run the decomposition (functional.runs_decomposition)
masked_fill.fused = True
