"""Sample generator for ``_scaled_mm`` (dispatcher/optable/scaled_mm.py). Its matrices are always
float8 (the suites never iterate float8 dtypes); the suite's dtype is the bias's and the output's
(``out_dtype``), so a suite of a dtype the row refuses sees its refusal. Small integers and
power-of-two scales keep every product and sum exact in float32, whatever the BLAS's order."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .sampling import Arr, Sample


def _mat(rng, shape, np_dtype, layout="contiguous"):
    return Arr(rng.integers(-4, 5, shape).astype(np.float32).astype(np_dtype), layout)


def scaled_mm(op, dtype, device, rng):
    a = _mat(rng, (8, 16), ml_dtypes.float8_e4m3fn)
    b = _mat(rng, (16, 4), ml_dtypes.float8_e5m2, "transposed")
    bias = Arr(rng.integers(0, 3, (4,)).astype(dtype.np))
    half, two = Arr(np.array(0.5, np.float32)), Arr(np.array(2.0, np.float32))
    yield Sample((a, b, half, two, bias, None, dtype), "tensor-wise", dtype)
    rows = Arr(np.full((8, 1), 0.25, np.float32))
    cols = Arr(np.full((1, 4), 4.0, np.float32))
    yield Sample((a, b, rows, cols, bias, None, dtype), "row-wise", dtype)


GENERATORS = {"scaled_mm": scaled_mm}
