"""What a tensor can hold: shapes (dims, sizes, element and byte counts) and scalar values per
dtype. Factories, views and fills check here, so every refusal has one wording (PyTorch's)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ember import _dtype as dt

INT64_MAX = (1 << 63) - 1
# CPU storages are numpy buffers and numpy arrays hold at most 64 dims; refusing more at creation
# beats failing later inside numpy (repr, numpy(), reductions).
MAX_DIMS = 64


def check_shape(op_name: str, shape: tuple, itemsize: int | None = None) -> None:
    """Refuse a shape (a tuple of ints) ember cannot hold.

    More than 64 dims, a negative size, or sizes whose product overflows int64 (with ``itemsize``:
    the bytes of a new storage) raise RuntimeError naming the op and the sizes. Zero sizes do not
    excuse an overflow: the strides of the other dims must still fit in int64 (PyTorch agrees).
    A length, a product and a minimum when the shape is fine: views call it too.
    """
    if (
        shape
        and len(shape) <= MAX_DIMS
        and min(shape) > 0
        and math.prod(shape) * (itemsize or 1) <= INT64_MAX
    ):
        return
    _refuse_shape(op_name, shape, itemsize)


def _refuse_shape(op_name: str, shape: tuple, itemsize: int | None) -> None:
    if len(shape) > MAX_DIMS:
        raise RuntimeError(
            f"{op_name}(): ember supports at most {MAX_DIMS} dims, got {len(shape)}: {list(shape)}"
        )
    if not shape:
        return
    if min(shape) < 0:
        size = next(s for s in shape if s < 0)
        raise RuntimeError(
            f"{op_name}(): Trying to create tensor with negative dimension {size}: {list(shape)}"
        )
    count = math.prod(s for s in shape if s)  # zero-size shapes: the other dims' strides
    if itemsize is None:
        if count > INT64_MAX:
            raise RuntimeError(
                f"{op_name}(): numel: integer multiplication overflow (sizes {list(shape)})"
            )
    elif count * itemsize > INT64_MAX:
        raise storage_overflow(op_name, shape)


def storage_overflow(op_name: str | None, shape: tuple) -> RuntimeError:
    prefix = f"{op_name}(): " if op_name else ""
    return RuntimeError(
        f"{prefix}Storage size calculation overflowed with sizes={[int(s) for s in shape]}"
    )


def check_dims(op_name: str, ndim: int) -> None:
    """Refuse a result of more than 64 dims (unsqueeze, unfold add one to their input's)."""
    if ndim > MAX_DIMS:
        raise RuntimeError(f"{op_name}(): ember supports at most {MAX_DIMS} dims, got {ndim}")


# PyTorch names the C type in "value cannot be converted to type int8_t without overflow".
_C_TYPES = {
    dt.uint8: "uint8_t",
    dt.int8: "int8_t",
    dt.int16: "int16_t",
    dt.int32: "int",
    dt.int64: "int64_t",
    dt.uint16: "uint16_t",
    dt.uint32: "uint32_t",
    dt.uint64: "uint64_t",
    dt.float16: "c10::Half",
    dt.bfloat16: "c10::BFloat16",
    dt.float32: "float",
    dt.float64: "double",
}


def _value_range(d) -> tuple:
    if d.category == dt.FLOATING:
        top = float((ml_dtypes.finfo if d is dt.bfloat16 else np.finfo)(d.np).max)
        return -top, top
    info = np.iinfo(d.np)
    # c10::overflows lets unsigned types take negatives down to -max (two's complement wrap).
    low = int(info.min) if d.is_signed else -int(info.max)
    return low, int(info.max)


_RANGES = {d: _value_range(d) for d in _C_TYPES}


def check_scalar_fits(op_name: str, value, dtype, type_name: str | None = None) -> None:
    """Refuse a Python scalar that ``dtype`` cannot hold, as PyTorch's checked_convert does:
    out of range for an integer dtype (NaN included), or finite and beyond the largest finite
    value of a floating dtype. Bool takes anything. A dict lookup and two compares when it fits.
    ``type_name``: the type the message names (PyTorch's ops name the C type, ``tensor()`` the
    dtype)."""
    limits = _RANGES.get(dtype)
    try:
        if limits is None or limits[0] <= value <= limits[1]:
            return
    except TypeError:  # not a number: the caller's own check names what it accepts
        return
    if dtype.category == dt.FLOATING and (value != value or abs(value) == math.inf):
        return  # NaN and infinities convert to floating types
    raise RuntimeError(
        f"{op_name}(): value cannot be converted to type {type_name or _C_TYPES[dtype]} without "
        f"overflow "
        f"(value {value!r}, dtype {dtype.name})"
    )
