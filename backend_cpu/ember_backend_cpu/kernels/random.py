"""Glue for the Philox random fills (uniform_, normal_, random_); the contract is docs/random.md.

Kernel convention: ``kernel(out, seed, offset, a, b)``. The C fills write contiguous memory;
a strided ``out`` is filled through a contiguous buffer and a strided copy, so element ``i`` is
still the ``i``-th element in row-major logical order.
"""

from __future__ import annotations

import math

import numpy as np

from ._args import DTYPE_NAMES, addr, raise_status

FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = 6, 7, 8, 9
_U64 = 1 << 64
# Largest finite values: above them the answer is the maximum itself (and numpy casts overflow).
_MAX = {FLOAT16: 65504.0, BFLOAT16: 3.3895313892515355e38, FLOAT32: 3.4028234663852886e38}


def below(high: float, code: int) -> float:
    """The largest value of the float dtype ``code`` that is strictly below ``high``."""
    if code == FLOAT64:
        return float(np.nextafter(high, -np.inf))
    if high > _MAX[code]:
        return _MAX[code]
    f = np.float32(high)
    if float(f) >= high:  # in double: numpy would compare a float32 with a Python float in float32
        f = np.nextafter(f, np.float32(-np.inf))
    if code == FLOAT16:
        h = np.float16(f)
        if h > f:
            h = np.nextafter(h, np.float16(-np.inf))
        return float(h)
    if code == BFLOAT16:
        # bfloat16 is float32 with the low 16 bits cleared: clearing rounds toward zero, which is
        # downward for positives; a negative with bits cleared moved up, so step one ulp down.
        bits = int(f.view(np.uint32))
        kept = bits & 0xFFFF0000
        if kept != bits and bits >> 31:
            kept += 0x10000
        return float(np.uint32(kept).view(np.float32))
    return float(f)


def _make(ffi, lib, name: str, fill, args):
    """A kernel that calls ``fill(code, seed, offset, n, address, *args(code, a, b))``."""
    copy, null = lib.ember_copy, ffi.NULL

    def kernel(out, seed, offset, a, b):
        code = out._dtype.code
        n = math.prod(out._shape)
        extra = args(code, a, b)
        if out._contig:
            status = fill(code, seed, offset, n, addr(out), *extra)
        else:
            buffer = np.empty(n * out._dtype.itemsize, np.uint8)
            tmp = buffer.ctypes.data
            shape = out._shape
            status = fill(code, seed, offset, n, tmp, *extra) or copy(
                code, code, 0, len(shape), shape, addr(out), out._stride, tmp, null
            )
        if status:
            raise_status(status, name, code)

    kernel.__qualname__ = f"cpu.{name}"
    return kernel


def _uniform_args(code, low, high):
    return float(low), float(high), below(high, code) if low < high else math.inf


def _normal_args(code, mean, std):
    return float(mean), float(std)


def _random_args(code, low, high):
    return int(low), (int(high) - int(low)) % _U64


def build(ffi, lib) -> dict:
    floats = DTYPE_NAMES[FLOAT16:]
    uniform = _make(ffi, lib, "uniform_", lib.ember_uniform, _uniform_args)
    normal = _make(ffi, lib, "normal_", lib.ember_normal, _normal_args)
    random = _make(ffi, lib, "random_", lib.ember_random_int, _random_args)
    return {
        "uniform_": dict.fromkeys(floats, uniform),
        "normal_": dict.fromkeys(floats, normal),
        "random_": dict.fromkeys(DTYPE_NAMES, random),
    }
