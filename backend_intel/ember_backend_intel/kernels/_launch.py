"""What every kernel glue needs: devices, (buffer, offset) operands, packed shapes, host scalars,
and status codes -> exceptions.

Kernels receive ember tensors and read only the attributes of the kernel contract: ``_storage``
(``handle``, the ``cl.Buffer``; ``byte_offset``; ``device.index``), ``_offset``, ``_shape``,
``_stride``, ``_contig`` and ``_dtype`` (``code``, ``name``, ``itemsize``).
"""

from __future__ import annotations

import itertools
import math
import struct

import numpy as np

from ._shared import DTYPE_NAMES, FLOAT_CODES

# Dtype tokens of clc/ember.h, by ember dtype code (bool=0 ... float64=9).
TOKENS = ("b", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64")
TOKEN_OF_NAME = dict(zip(DTYPE_NAMES, TOKENS))
INT_BITS = {1: (8, False), 2: (8, True), 3: (16, True), 4: (32, True), 5: (64, True)}
SCALARS = (bool, int, float)
MAX_DIMS = 8  # dims a kernel walks (shapes travel as long8)

# Status codes of clc/ember.h.
ZERO_DIVISION = 1
NEGATIVE_POWER = 2
INDEX_OUT_OF_RANGE = 3
BAD_ARGUMENT = 4

_LONG8 = struct.Struct("<8q").pack
_ZEROS8 = (0,) * MAX_DIMS


def device_of(runtime, t):
    """The runtime's Device holding tensor ``t``."""
    return runtime.devices[t._storage.device.index]


def offset(t) -> int:
    """Element offset of ``t``'s first element in its buffer (blocks are 512-byte aligned)."""
    return t._storage.byte_offset // t._dtype.itemsize + t._offset


def numel(t) -> int:
    return math.prod(t._shape)


def pack(values) -> bytes:
    """A long8 kernel argument (shape or strides), zero-padded."""
    if len(values) > MAX_DIMS:
        raise RuntimeError(
            f"xpu kernels walk at most {MAX_DIMS} dims once merged; this layout needs "
            f"{len(values)}: make the tensor contiguous first"
        )
    return _LONG8(*values, *_ZEROS8[len(values) :])


NO_DIMS = _LONG8(*_ZEROS8)  # the long8 of a kernel call over contiguous operands (nd = 0)


def merge_dims(shape, strides: list) -> tuple[tuple, list]:
    """Drop size-1 dims and merge neighbours that are contiguous for every operand; an empty shape
    stays empty (one element)."""
    kept = [d for d, size in enumerate(shape) if size != 1]
    if not kept:
        return (), [() for _ in strides]
    out_shape = [shape[kept[0]]]
    out = [[s[kept[0]]] for s in strides]
    for d in kept[1:]:
        size = shape[d]
        if all(o[-1] == s[d] * size for o, s in zip(out, strides)):
            out_shape[-1] *= size
            for o, s in zip(out, strides):
                o[-1] = s[d]
        else:
            out_shape.append(size)
            for o, s in zip(out, strides):
                o.append(s[d])
    return tuple(out_shape), [tuple(o) for o in out]


def blocks(shape: tuple, strides: list):
    """``(element offsets, shape, strides)`` pieces of at most MAX_DIMS dims covering the layout:
    one piece normally, a loop over the leading dims for the rare layout with more."""
    if len(shape) <= MAX_DIMS:
        yield [0] * len(strides), shape, strides
        return
    lead = len(shape) - MAX_DIMS
    tails = [s[lead:] for s in strides]
    for index in itertools.product(*(range(n) for n in shape[:lead])):
        deltas = [sum(i * st for i, st in zip(index, s[:lead])) for s in strides]
        yield deltas, shape[lead:], tails


def fold_around(shape: tuple, strides: list, dim: int):
    """Pieces of a layout for kernels that walk ``shape`` and index along ``dim``: the other
    dims merged where every operand allows (``dim`` stays a dim of its own), then, past
    MAX_DIMS, a loop over leading dims other than ``dim``, as in blocks(). Yields
    ``(element offsets, shape, strides, dim)`` per piece, so no rank is refused."""
    before, head = merge_dims(shape[:dim], [s[:dim] for s in strides])
    after, tail = merge_dims(shape[dim + 1 :], [s[dim + 1 :] for s in strides])
    shape = (*before, shape[dim], *after)
    strides = [(*h, s[dim], *t) for h, s, t in zip(head, strides, tail)]
    dim = len(before)
    if len(shape) <= MAX_DIMS:
        yield [0] * len(strides), shape, strides, dim
        return
    loop = [d for d in range(len(shape)) if d != dim][: len(shape) - MAX_DIMS]
    keep = [d for d in range(len(shape)) if d not in loop]
    kept = [tuple(s[d] for d in keep) for s in strides]
    for index in itertools.product(*(range(shape[d]) for d in loop)):
        deltas = [sum(i * s[d] for i, d in zip(index, loop)) for s in strides]
        yield deltas, tuple(shape[d] for d in keep), kept, keep.index(dim)


def run_strided(dev, kernel, shape: tuple, layouts: list, *tail) -> None:
    """Launch a kernel over ``shape`` whose operands have any strides.

    ``layouts`` holds a ``(buffer, element offset, strides)`` triple per operand; the kernel takes
    ``(buffer, offset, long8 strides)`` per operand, then ``(long8 shape, int nd, long n)``, then
    ``tail``. Dims are merged first; a layout of more than MAX_DIMS dims takes several launches.
    """
    shape, strides = merge_dims(shape, [layout[2] for layout in layouts])
    for deltas, sub_shape, sub_strides in blocks(shape, strides):
        args = []
        for (buffer, at, _strides), delta, sub in zip(layouts, deltas, sub_strides):
            args += (buffer, at + delta, pack(sub))
        n = math.prod(sub_shape)
        dev.launch(kernel, n, *args, pack(sub_shape), len(sub_shape), n, *tail)


# ---- Python scalars as the kernels see them ------------------------------------------------------
def _wrap(value: int, code: int) -> int:
    bits, signed = INT_BITS[code]
    value &= (1 << bits) - 1
    return value - (1 << bits) if signed and value >> (bits - 1) else value


def bf16_bits(value: float) -> int:
    """float -> bfloat16 bits through float32, rounding to nearest even (as clc/ember.h)."""
    u = int(np.float32(value).view(np.uint32))
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return (u >> 16) | 0x40
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def compute_scalar(code: int, value):
    """A Python scalar operand stored in dtype ``code`` and loaded back, as the CPU does."""
    if code in FLOAT_CODES:
        value = float(value)
        if code == 9:
            return value
        if code == 8:
            return float(np.float32(value))
        if code == 6:
            return float(np.float32(value).astype(np.float16))
        return float(np.uint32(bf16_bits(value) << 16).view(np.float32))
    value = int(value)
    return int(value != 0) if code == 0 else _wrap(value, code)


def storage_scalar(code: int, value):
    """``value`` as dtype ``code``'s storage (the bits of half types), for fill_ and friends."""
    if code == 6:
        return int(np.float32(float(value)).astype(np.float16).view(np.uint16))
    if code == 7:
        return bf16_bits(float(value))
    return compute_scalar(code, value)


# ---- status -> exceptions ----------------------------------------------------------------------
def raise_status(code: int, op: str, dtype_name: str, detail: str = "") -> None:
    if code == ZERO_DIVISION:
        raise ZeroDivisionError(f"{op}: integer division by zero ({dtype_name})")
    if code == NEGATIVE_POWER:
        raise RuntimeError(
            f"{op}: Integers to negative integer powers are not allowed ({dtype_name})"
        )
    if code == INDEX_OUT_OF_RANGE:
        raise IndexError(f"{op}: index out of range{': ' + detail if detail else ''}")
    raise RuntimeError(f"{op}: xpu kernel failed with status {code} ({dtype_name}) {detail}")


def check_status(dev, op: str, dtype_name: str, describe=None) -> None:
    """Wait for the kernels and raise what they reported; ``describe(value)`` -> detail text."""
    code, value = dev.read_status()
    if code:
        detail = describe(value) if describe is not None and code == INDEX_OUT_OF_RANGE else ""
        raise_status(code, op, dtype_name, detail)
