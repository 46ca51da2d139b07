"""pow by a Python scalar exponent (csrc/binary_loops.c em_pow_by_scalar): 2, 3, -1, -2, 0.5 and
-0.5 run as products, reciprocals and roots, as PyTorch computes them, not through libm's pow.

The values must be PyTorch's bit for bit in float32 and float64 (0.5 is the correctly rounded
square root, which PyTorch's Sleef-based pow misses by up to 1 ulp), special values included,
contiguous or strided; other exponents and tensor exponents keep pow.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 1e30, -1e30, 1.0, -1.0, 2.0]
EXPONENTS = [2, 3, -1, -2, 0.5, -0.5, 2.0, 3.0]


def _operands(dtype: str, strided: bool):
    """(ember tensor, the same values in numpy): special values and normal samples, 821 x 5, or
    every other column of it (strided)."""
    rng = np.random.default_rng(0)
    values = np.concatenate([SPECIAL, rng.standard_normal(4093) * 10]).astype(dtype)
    x = ember.from_numpy(values.reshape(-1, 5))
    if strided:
        return x[:, ::2], np.ascontiguousarray(values.reshape(-1, 5)[:, ::2])
    return x, values.reshape(-1, 5)


def _same(ours: np.ndarray, ref: np.ndarray) -> None:
    """Equal bits (so zeros' signs count), NaN equal to NaN."""
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan)
    kind = np.uint32 if ref.dtype == np.float32 else np.uint64
    assert np.array_equal(ours[~nan].view(kind), ref[~nan].view(kind))


@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("exponent", EXPONENTS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_scalar_is_pytorchs(dtype, exponent, strided):
    x, base = _operands(dtype, strided)
    ours = (x**exponent).numpy()
    if exponent == 0.5:
        with np.errstate(invalid="ignore"):
            ref = np.sqrt(base)  # correctly rounded, as PyTorch's torch.sqrt on these
    else:
        ref = (torch.from_numpy(base) ** exponent).numpy()
    _same(ours, ref)


@pytest.mark.parametrize("exponent", [-3, 2.5, 1.0])
def test_other_exponents_keep_pow(exponent):
    x, base = _operands("float64", False)
    ours = ember.pow(x, exponent).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.power(base, exponent)
    np.testing.assert_allclose(ours, ref, rtol=1e-15, equal_nan=True)


def test_tensor_exponent_keeps_pow():
    """A tensor of 3s is not a scalar exponent: libm's pow per element, within 1 ulp of the
    correctly rounded value (x * x * x may be 2 away)."""
    x, base = _operands("float32", False)
    threes = ember.full(tuple(x.shape), 3.0)
    ref = torch.pow(torch.from_numpy(base).double(), 3.0).float().numpy()
    np.testing.assert_allclose(ember.pow(x, threes).numpy(), ref, rtol=2**-23, equal_nan=True)


@pytest.mark.parametrize("exponent", [2, 3, -1, -2, 0.5, -0.5])
def test_pow_scalar_bfloat16_within_rounding(exponent):
    """bfloat16 computes in float32 and rounds once (PyTorch rounds after each product, so 3 and
    -2 may differ from it by one bfloat16 ulp)."""
    x, base = _operands("float32", False)
    ours = (x.to(ember.bfloat16) ** exponent).float().numpy()
    ref = (torch.from_numpy(base).to(torch.bfloat16).double() ** exponent).float().numpy()
    np.testing.assert_allclose(ours, ref, rtol=2**-8, atol=0, equal_nan=True)
