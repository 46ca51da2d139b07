"""What every kernel glue needs: addresses, devices, byte strides, scalar bits, status codes.

Kernels receive ember tensors and read only the attributes of the kernel contract
(``_storage.ptr``, ``_storage.device``, ``_offset``, ``_shape``, ``_stride``, ``_contig``,
``_dtype``). Python scalars arrive already converted to the op's compute dtype category.
"""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np

from .. import launch
from ..codegen.dtypes import BY_CODE
from ..codegen.prelude import (
    BAD_ARGUMENT,
    INDEX_OUT_OF_RANGE,
    MAX_DIMS,
    NEGATIVE_POWER,
    ZERO_DIVISION,
)

SCALARS = (bool, int, float)
DTYPE_NAMES = tuple(BY_CODE[code].name for code in sorted(BY_CODE))
TOKENS = tuple(BY_CODE[code].token for code in sorted(BY_CODE))
FLOAT_CODES = frozenset(code for code, d in BY_CODE.items() if d.floating)
INT64 = 5


def addr(t) -> int:
    """Device address of a tensor's first element."""
    return t._storage.ptr + t._offset * t._dtype.itemsize


def device(t) -> int:
    index = t._storage.device.index
    return 0 if index is None else index


def numel(t) -> int:
    return math.prod(t._shape)


def token(t) -> str:
    return TOKENS[t._dtype.code]


def dims(t) -> tuple[tuple, tuple]:
    """(shape, byte strides), a 0-d tensor as one element."""
    if not t._shape:
        return (1,), (0,)
    size = t._dtype.itemsize
    return t._shape, tuple(s * size for s in t._stride)


def scalar_parts(dtype_code: int, value) -> tuple[float, int]:
    """A Python scalar as the (double, int64) pair the kernels take."""
    if dtype_code in FLOAT_CODES:
        return float(value), 0
    return 0.0, int(value)


def _bf16_bits(value: float) -> int:
    bits = struct.unpack("<I", struct.pack("<f", np.float32(value)))[0]
    if (bits & 0x7FFFFFFF) > 0x7F800000:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def scalar_bits(value, dtype_code: int) -> int:
    """The storage bits of ``value`` in a dtype (the low bytes of a little-endian word), rounded
    as the CPU backend stores scalars: float16 and bfloat16 through float32."""
    d = BY_CODE[dtype_code]
    if d.token == "b":
        return int(bool(value))
    if not d.floating:
        return int(value) & ((1 << (8 * d.itemsize)) - 1)
    if d.token == "bf16":
        return _bf16_bits(float(value))
    numpy_type = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[d.token]
    if d.token == "f16":
        stored = np.float16(np.float32(value))
    else:
        stored = numpy_type(value)
    return int.from_bytes(stored.tobytes(), "little")


def raise_status(status: int, op: str, dtype_name: str, detail: str = "") -> None:
    if status == ZERO_DIVISION:
        raise ZeroDivisionError(f"{op}: integer division by zero ({dtype_name})")
    if status == NEGATIVE_POWER:
        raise RuntimeError(
            f"{op}: Integers to negative integer powers are not allowed ({dtype_name})"
        )
    if status == INDEX_OUT_OF_RANGE:
        raise IndexError(f"{op}: index out of range{': ' + detail if detail else ''}")
    if status == BAD_ARGUMENT:
        raise RuntimeError(f"{op}: bad argument ({dtype_name}) {detail}")
    raise RuntimeError(f"{op}: CUDA kernel failed with status {status} ({dtype_name}) {detail}")


def run_strided(rt, dev: int, kernel: str, shape, operands, after=(), tail=()) -> None:
    """Launch a grid-stride ``em_nd`` kernel over ``shape``.

    ``operands`` are ``(address or 0, byte strides, scalar bits)``; the kernel's arguments are
    ``(*addresses, *after, *em_nd, *tail)``. Dims beyond what em_nd holds become a host loop.
    """
    if math.prod(shape) == 0:
        return
    shape, strides = launch.coalesce(shape, [op[1] for op in operands])
    bits = [op[2] for op in operands]
    if len(shape) <= MAX_DIMS:  # the common case: one launch, no host loop to plan
        nd = launch.nd_args(shape, strides, bits)
        ptrs = [op[0] for op in operands]
        rt.launch_1d(dev, kernel, math.prod(shape), *ptrs, *after, *nd, *tail)
        return
    for offsets, inner_shape, inner in launch.split_outer(shape, strides):
        ptrs = [op[0] + off if op[0] else 0 for op, off in zip(operands, offsets)]
        nd = launch.nd_args(inner_shape, inner, bits)
        rt.launch_1d(dev, kernel, math.prod(inner_shape), *ptrs, *after, *nd, *tail)


def compute_bits(value, dtype_code: int, unrounded: bool) -> int:
    """A scalar's bits in the dtype's compute type (float32 for float16 and bfloat16: the second
    operand of the binary loops, em_load_c): ``unrounded`` keeps its float32 value (PyTorch's
    opmath scalar of mul and the divisions), else it is rounded through the dtype first."""
    token = BY_CODE[dtype_code].token
    if token == "bf16":
        value = (
            float(value)
            if unrounded
            else float(np.uint32(_bf16_bits(value) << 16).view(np.float32))
        )
    elif token == "f16":
        value = float(value) if unrounded else float(np.float16(np.float32(value)))
    else:
        return scalar_bits(value, dtype_code)
    return int(np.float32(value).view(np.uint32))


def operand(value, dtype_code: int, shape, unrounded=None) -> tuple:
    """``(address, byte strides, scalar bits)`` of a tensor broadcast to ``shape``, or of a
    scalar (address 0, stride 0): its storage bits, or with ``unrounded`` given (True or False)
    its compute type's (see compute_bits)."""
    if value.__class__ in SCALARS:
        if unrounded is not None:
            return 0, (0,) * max(len(shape), 1), compute_bits(value, dtype_code, unrounded)
        return 0, (0,) * max(len(shape), 1), scalar_bits(value, dtype_code)
    if not value._shape:
        return addr(value), (0,) * max(len(shape), 1), 0
    size = value._dtype.itemsize
    return addr(value), tuple(s * size for s in value._stride), 0


def index_values(rt, t) -> np.ndarray:
    """An int64 tensor's values on the host, for error messages (a slow path)."""
    shape, strides = dims(t)
    out = np.empty(math.prod(shape), np.int64)
    if out.size:
        tmp = rt.scratch(device(t), out.nbytes)
        contiguous = tuple(8 * math.prod(shape[d + 1 :]) for d in range(len(shape)))
        kernel = "em_copy_i64_i64"
        run_strided(rt, device(t), kernel, shape, [(tmp, contiguous, 0), (addr(t), strides, 0)])
        rt.read(device(t), out, tmp)
    return out


def first_outside(rt, index, low: int, high: int):
    """The first index value outside [low, high) in row-major order, or None."""
    values = index_values(rt, index)
    bad = values[(values < low) | (values >= high)]
    return int(bad[0]) if bad.size else None


def math_library(rt, maker: str, what: str):
    """The runtime's binding of a math library (``rt.make_solver()``, ``rt.make_fft()``...), or
    None where the runtime has none or it does not load; then ``what`` runs on the CPU through the
    declared fallback, which a warning says once."""
    make = getattr(rt, maker, None)
    if make is None:
        return None
    try:
        return make()
    except (OSError, ImportError) as error:
        warnings.warn(
            f"ember {rt.device_type} backend: {error}; {what} run on the CPU (fallback)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
