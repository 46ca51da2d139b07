"""The FFT primitives (``_fft_r2c``, ``_fft_c2r``, ``_fft_c2c``, complex tensors as their real
view) against PyTorch's same ATen ops, float32 computed in float32, on every device; gradients by
gradcheck in float64 (the generated op and gradient suites cover the layouts)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck

TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-12, atol=1e-12)}
CASES = [((16,), [0]), ((3, 10), [1]), ((4, 6), [0, 1]), ((2, 5, 8), [-2, -1])]


def _ember(x, device):
    return ember.tensor(x, device=device)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shape,dims", CASES)
def test_r2c_c2r_c2c_match_torch(shape, dims, dtype_name, device, rng):
    x = rng.standard_normal(shape).astype(dtype_name)
    # torch's private ops assert on negative dims (its public functions wrap them first)
    tdims = [d % len(shape) for d in dims]
    for norm in (0, 1, 2):
        for onesided in (True, False):
            got = ember.ops._fft_r2c(_ember(x, device), dims, norm, onesided)
            want = torch.view_as_real(torch._fft_r2c(torch.tensor(x), tdims, norm, onesided))
            assert got.dtype is getattr(ember, dtype_name)  # float32 stays float32
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL[dtype_name])
        spectrum = torch._fft_r2c(torch.tensor(x), tdims, 0, True)
        z = torch.view_as_real(spectrum).numpy()
        n = shape[max(d % len(shape) for d in dims)]
        got = ember.ops._fft_c2r(_ember(z, device), dims, norm, n)
        want = torch._fft_c2r(spectrum, tdims, norm, n)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL[dtype_name])
        full = torch._fft_r2c(torch.tensor(x), tdims, 0, False)
        for forward in (True, False):
            got = ember.ops._fft_c2c(
                _ember(torch.view_as_real(full).numpy(), device), dims, norm, forward
            )
            want = torch.view_as_real(torch._fft_c2c(full, tdims, norm, forward))
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL[dtype_name])


def test_gradients(device, rng):
    x = _ember(rng.standard_normal((3, 6)), device).requires_grad_()
    z = _ember(rng.standard_normal((3, 4, 2)), device).requires_grad_()
    for norm in (0, 1, 2):
        assert gradcheck(lambda t, norm=norm: ember.ops._fft_r2c(t, [1], norm, True), (x,))
        assert gradcheck(lambda t, norm=norm: ember.ops._fft_r2c(t, [0, 1], norm, False), (x,))
        for n in (6, 7):
            assert gradcheck(lambda t, norm=norm, n=n: ember.ops._fft_c2r(t, [1], norm, n), (z,))
        assert gradcheck(lambda t, norm=norm: ember.ops._fft_c2c(t, [0, 1], norm, True), (z,))


def test_errors():
    with pytest.raises(RuntimeError, match="real view of a complex tensor"):
        ember.ops._fft_c2c(ember.ones(3, 3), [0], 0, True)
    with pytest.raises(RuntimeError, match="not implemented for int64"):
        ember.ops._fft_r2c(ember.ones(4, dtype=ember.int64), [0], 0, True)
    with pytest.raises(IndexError):
        ember.ops._fft_r2c(ember.ones(4), [1], 0, True)
