"""Copies, casts and fills for the dtypes PyTorch gives "limited support": the float8 formats and
uint16/32/64. They are moved in numpy (no C loops: PyTorch runs no arithmetic on them either);
float8 values go through float32 with PyTorch's exact bits (``..float8``)."""

from __future__ import annotations

import numpy as np

from ..float8 import FORMATS, decode, encode
from ._args import array_view

FLOAT8_NAMES = tuple(FORMATS)
NAMES = (*FLOAT8_NAMES, "uint16", "uint32", "uint64")
FIRST_CODE = 12  # ember.dtype.code of the first limited dtype; the C kernels stop before it


def _values(src) -> np.ndarray:
    """``src``'s values as a numpy array numpy can cast (float8: float32 with PyTorch's bits)."""
    name = src._dtype.name
    if name in FORMATS:
        return decode(np.ascontiguousarray(array_view(src, np.uint8)), name)
    return array_view(src)


def _store(dst, values: np.ndarray) -> None:
    name = dst._dtype.name
    if name in FORMATS:  # PyTorch casts anything to float8 through float32
        values = encode(np.ascontiguousarray(values, dtype=np.float32), name)
        np.copyto(array_view(dst, np.uint8), values)
        return
    with np.errstate(all="ignore"):
        np.copyto(array_view(dst), values, casting="unsafe")


def copy_(dst, src) -> None:
    """dst[...] = src with a cast, where either side is a limited dtype."""
    _store(dst, _values(src))


def fill_(out, value) -> None:
    if out._dtype.name in FORMATS:
        values = np.full(out._shape, value, dtype=np.float32)
    else:  # in range (checked by the caller), where a negative one wraps, as c10 casts it
        bits = 8 * np.dtype(out._dtype.np).itemsize
        values = np.full(out._shape, int(value) % (1 << bits), dtype=out._dtype.np)
    _store(out, values)


def build(ffi, lib) -> dict:
    return {"copy_": dict.fromkeys(NAMES, copy_), "fill_": dict.fromkeys(NAMES, fill_)}
