"""float8 <-> float32 conversions with PyTorch's exact bits (c10/util/Float8_*.h).

PyTorch converts every dtype to a float8 through float32 (its constructors take a float) and every
float8 to other dtypes through float32. ml_dtypes rounds the same way (to nearest, ties to even)
but differs at the edges, fixed here: e4m3fn saturates overflow and infinities to +-448 in
PyTorch (ml_dtypes gives NaN), e5m2 writes NaN as 0x7F (ml_dtypes rounds the payload), e8m0fnu
ignores the sign (ml_dtypes gives NaN for negatives), and the NaNs read back as PyTorch's bits.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

FORMATS = {
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
}

# The float32 bits PyTorch reads each format's NaN codes as (sign kept where the format has one).
NAN_BITS = {
    "float8_e4m3fn": 0x7FF00000,
    "float8_e4m3fnuz": 0x7F800001,
    "float8_e5m2fnuz": 0x7F800001,
    "float8_e8m0fnu": 0x7F800001,
}
E4M3FN_OVERFLOW = 1087 << 20  # |x| bits from 480.0 on (and inf) saturate to 0x7E
E5M2_NAN = 0x7F
QUIET = 0x400000


def _e8m0_bits(f32: np.ndarray) -> np.ndarray:
    """The exponent field of |x|, rounded to nearest even on the mantissa; NaN/inf -> 0xFF."""
    bits = f32.view(np.uint32)
    exponent = (bits >> 23) & 0xFF
    guard = (bits & 0x400000) != 0
    rest = (bits & 0x3FFFFF) != 0
    up = guard & (rest | (exponent > 0)) & (exponent != 0xFF)
    return (exponent + up).astype(np.uint8)


def encode(f32: np.ndarray, name: str) -> np.ndarray:
    """float32 values -> the uint8 codes of float8 format ``name``."""
    if name == "float8_e8m0fnu":
        return _e8m0_bits(f32)
    with np.errstate(all="ignore"):
        codes = f32.astype(FORMATS[name]).view(np.uint8)
    bits = f32.view(np.uint32)
    sign = ((bits >> 24) & 0x80).astype(np.uint8)
    nan = np.isnan(f32)
    if name == "float8_e4m3fn":
        magnitude = bits & 0x7FFFFFFF
        # Finite values that round up into the NaN code (464 < |x| < 480) saturate too.
        saturated = (magnitude >= E4M3FN_OVERFLOW) | ((codes & 0x7F) == 0x7F)
        codes = np.where(saturated, sign | 0x7E, codes)
        codes = np.where(nan, sign | 0x7F, codes)
    elif name == "float8_e5m2":
        codes = np.where(nan, sign | E5M2_NAN, codes)
    return codes.astype(np.uint8, copy=False)


def decode(codes: np.ndarray, name: str) -> np.ndarray:
    """uint8 codes of float8 format ``name`` -> float32 values, NaNs with PyTorch's bits."""
    if name == "float8_e5m2":  # the top byte of a float16, NaN payload kept and made quiet
        f32 = (codes.astype(np.uint16) << 8).view(np.float16).astype(np.float32)
        bits = f32.view(np.uint32)
        return np.where(np.isnan(f32), bits | QUIET, bits).astype(np.uint32).view(np.float32)
    f32 = codes.view(FORMATS[name]).astype(np.float32)
    nan_bits = NAN_BITS.get(name)
    if nan_bits is not None:
        bits = f32.view(np.uint32)
        sign = (codes.astype(np.uint32) & 0x80) << 24
        if name != "float8_e4m3fn":
            sign = np.zeros_like(sign)
        bits = np.where(np.isnan(f32), sign | nan_bits, bits)
        f32 = bits.astype(np.uint32).view(np.float32)
    return f32
