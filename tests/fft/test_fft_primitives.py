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
# Beyond the trailing dims: a leading dim (elements after it), dims that are not consecutive and
# four consecutive dims (cuFFT plans at most three: the GPU kernels split the transform)
CASES = [
    ((16,), [0]),
    ((3, 10), [1]),
    ((4, 6), [0, 1]),
    ((2, 5, 8), [-2, -1]),
    ((5, 3, 4), [0]),
    ((3, 4, 5), [0, 2]),
    ((2, 3, 2, 3, 4), [0, 1, 2, 3]),
]


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


def test_strided_inputs(device, rng):
    """Transposed and sliced inputs are read through their strides."""
    x = rng.standard_normal((6, 5, 4))
    xe = _ember(x, device).transpose(0, 2)[:, 1:]
    xt = torch.tensor(x).transpose(0, 2)[:, 1:]
    for dims in ([0], [1, 2], [0, 2]):
        got = ember.ops._fft_r2c(xe, dims, 1, True)
        want = torch.view_as_real(torch._fft_r2c(xt, dims, 1, True))
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL["float64"])
        z = ember.ops._fft_r2c(xe, dims, 0, False)
        zt = torch._fft_r2c(xt, dims, 0, False)
        got = ember.ops._fft_c2c(z.transpose(0, 1), dims, 2, False)
        want = torch.view_as_real(torch._fft_c2c(zt.transpose(0, 1), dims, 2, False))
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL["float64"])
        half = ember.ops._fft_r2c(xe, dims, 0, True).transpose(0, 1)
        n = xt.shape[max(dims)] if max(dims) != 1 else xt.shape[0]
        got = ember.ops._fft_c2r(half, dims, 2, n)
        want = torch._fft_c2r(torch._fft_r2c(xt, dims, 0, True).transpose(0, 1), dims, 2, n)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL["float64"])


def test_complex_inputs_in_any_layout(device, rng):
    """Real views at an odd offset (the CPU kernel reads them as complex numbers in place), with
    odd strides or with the parts apart (it reads a copy)."""
    flat, table, parts = (rng.standard_normal(shape) for shape in (41, (10, 3), (2, 12)))
    layouts = (
        (_ember(flat, device)[1:].view(20, 2), torch.tensor(flat)[1:].view(20, 2)),
        (_ember(table, device)[:, 1:], torch.tensor(table)[:, 1:]),
        (_ember(parts, device).t(), torch.tensor(parts).t()),
    )
    for got_in, want_in in layouts:
        z = torch.view_as_complex(want_in.clone(memory_format=torch.contiguous_format))
        got = ember.ops._fft_c2c(got_in, [0], 1, True)
        want = torch.view_as_real(torch._fft_c2c(z, [0], 1, True))
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL["float64"])
        n = 2 * (z.shape[0] - 1)
        got = ember.ops._fft_c2r(got_in, [0], 2, n)
        want = torch._fft_c2r(z, [0], 2, n)
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL["float64"])


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_count_gives_the_same_transform(threads, device, rng):
    """The same transforms whatever ember.set_num_threads says (the CPU kernel hands the count
    to pocketfft: a batch large enough to be shared, and one long transform)."""
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for shape, dims in (((64, 2048), [1]), ((1 << 16,), [0]), ((128, 96), [0, 1])):
            x = rng.standard_normal(shape).astype("float32")
            got = ember.ops._fft_r2c(_ember(x, device), dims, 1, True)
            want = torch.view_as_real(torch._fft_r2c(torch.tensor(x), dims, 1, True))
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
            got = ember.ops._fft_c2c(got, dims, 2, False)
            want = torch.view_as_real(torch._fft_c2c(torch.view_as_complex(want), dims, 2, False))
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    finally:
        ember.set_num_threads(before)


def test_c2r_of_a_longer_or_shorter_spectrum(device, rng):
    """The row reads n // 2 + 1 entries: a longer input's first ones (ATen, for a full-length
    one; numpy's irfft for any), a shorter one is refused on every device rather than read past
    its end (ATen asserts)."""
    z = rng.standard_normal((3, 9)) + 1j * rng.standard_normal((3, 9))
    spectrum = _ember(np.stack([z.real, z.imag], -1), device)
    for n in (8, 9):
        got = ember.ops._fft_c2r(spectrum, [1], 2, n)
        np.testing.assert_allclose(got.cpu().numpy(), np.fft.irfft(z, n), **TOL["float64"])
    got = ember.ops._fft_c2r(spectrum[:, :8], [1], 0, 8)
    want = torch._fft_c2r(torch.tensor(z[:, :8]), [1], 0, 8)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), **TOL["float64"])
    with pytest.raises(RuntimeError, match=r"expected 16 entries \(last_dim_size // 2 \+ 1\)"):
        ember.ops._fft_c2r(spectrum, [1], 2, 30)


def test_empty_batch(device):
    """No element to transform: empty results of the right shapes (numpy's; PyTorch's MKL build
    refuses empty batches with a DFTI configuration error, its pocketfft build agrees)."""
    real, spectrum = ember.zeros(0, 8, device=device), ember.zeros(0, 5, 2, device=device)
    assert ember.ops._fft_r2c(real, [1], 0, True).shape == (0, 5, 2)
    assert ember.ops._fft_r2c(real, [1], 0, False).shape == (0, 8, 2)
    assert ember.ops._fft_c2r(spectrum, [1], 2, 8).shape == (0, 8)
    assert ember.ops._fft_c2c(spectrum, [1], 1, True).shape == (0, 5, 2)


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


def test_cpu_kernels_use_the_binding_scipy_fft_itself_calls():
    """scipy renames its private pocketfft binding between releases (``_pocketfft.pypocketfft``
    to ``_duccfft.pyduccfft`` in 1.18, which left the CPU backend unimportable on Python 3.12):
    the kernels must load whichever module this scipy's own ``scipy.fft`` runs on."""
    import importlib

    import ember_backend_cpu.kernels.fft as fft_kernels

    for package in ("scipy.fft._duccfft.basic", "scipy.fft._pocketfft.basic"):
        try:
            scipy_basic = importlib.import_module(package)
        except ImportError:
            continue
        assert fft_kernels.pocketfft is scipy_basic.pfft
        return
    pytest.fail("this scipy has neither fft binding ember's CPU kernels know")
