"""What every kernel glue needs: addresses, scalar operands, and status codes -> exceptions.

Kernels receive ember tensors and read only the attributes of the kernel contract
(ember docs/plugins.md): ``_storage.ptr``, ``_offset``, ``_shape``, ``_stride``, ``_contig`` and
``_dtype`` (``code``, ``name``, ``itemsize``, ``np``). Python scalars arrive already converted to
the op's compute dtype category.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

# ember.dtype.code order (the C enum in ember_cpu.h uses the same numbers).
DTYPE_NAMES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)
FLOAT_CODES = frozenset((6, 7, 8, 9))
SCALARS = (bool, int, float)

# Status codes from ember_cpu.h.
UNSUPPORTED = -1
ZERO_DIVISION = 1
NEGATIVE_POWER = 2
INDEX_OUT_OF_RANGE = 3
BAD_ARGUMENT = 4
NO_MEMORY = 5  # EM_NO_MEMORY in api_index.h: a kernel's scratch allocation failed


def addr(t) -> int:
    """Address of a tensor's first element."""
    return t._storage.ptr + t._offset * t._dtype.itemsize


def array_view(t, dtype=None) -> np.ndarray:
    """A numpy view of tensor ``t``'s memory (any strides), as ``dtype`` (default: its own)."""
    dtype = np.dtype(t._dtype.np if dtype is None else dtype)
    start = t._storage.ptr + t._offset * dtype.itemsize
    if t._contig:  # as_strided's bookkeeping costs microseconds per call
        return contiguous_array(start, t._shape, dtype)
    strides = tuple(s * dtype.itemsize for s in t._stride)
    return strided_array(start, t._shape, strides, dtype)


def contiguous_array(start: int, shape, dtype: np.dtype) -> np.ndarray:
    """A numpy view of the C-contiguous ``shape`` array of ``dtype`` at address ``start``."""
    count = math.prod(shape)
    if not count:
        return np.empty(shape, dtype)
    raw = (ctypes.c_char * (count * dtype.itemsize)).from_address(start)
    return np.frombuffer(raw, dtype, count).reshape(shape)


def strided_array(start: int, shape, strides, dtype: np.dtype) -> np.ndarray:
    """A numpy view of the memory at address ``start``, ``shape`` with byte ``strides`` (any
    sign, not necessarily whole elements: a complex view of a real tensor's pairs)."""
    shape, strides = tuple(shape), tuple(strides)
    if 0 in shape:
        return np.empty(shape, dtype)
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    raw = (ctypes.c_char * (high - low + dtype.itemsize)).from_address(start + low)
    return np.ndarray(shape, dtype, buffer=raw, offset=-low, strides=strides)


def numel(t) -> int:
    return math.prod(t._shape)


def scalar_parts(dtype_code: int, value) -> tuple[float, int]:
    """A Python scalar as the (double, int64) pair the C entry points take."""
    if dtype_code in FLOAT_CODES:
        return float(value), 0
    return 0.0, int(value)


def raise_status(status: int, op: str, dtype_code: int, detail: str = "") -> None:
    dtype = DTYPE_NAMES[dtype_code] if 0 <= dtype_code < len(DTYPE_NAMES) else str(dtype_code)
    if status == ZERO_DIVISION:
        raise ZeroDivisionError(f"{op}: integer division by zero ({dtype})")
    if status == NEGATIVE_POWER:
        raise RuntimeError(f"{op}: Integers to negative integer powers are not allowed ({dtype})")
    if status == INDEX_OUT_OF_RANGE:
        raise IndexError(f"{op}: index out of range{': ' + detail if detail else ''}")
    if status == NO_MEMORY:
        raise MemoryError(f"{op}: out of memory for the CPU kernel's scratch space ({dtype})")
    if status == UNSUPPORTED:
        raise NotImplementedError(f'"{op}" has no CPU kernel for {dtype}')
    raise RuntimeError(f"{op}: CPU kernel failed with status {status} ({dtype}) {detail}")
