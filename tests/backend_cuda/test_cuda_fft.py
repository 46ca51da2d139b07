"""ember.fft on CUDA: the cuFFT glue (ember_backend_gpu/kernels/fft.py) run by the CPU emulator
(numpy's pocketfft standing in for cuFFT through the same advanced layout) against PyTorch, the
rows' classification, and the CPU fallback when libcufft does not load. A real device runs
tests/fft with EMBER_TEST_DEVICES=cuda; tests/fft runs here too with EMBER_CUDA_EMULATOR=1."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher import coverage
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.optable import OPS

ROWS = ("_fft_r2c", "_fft_c2r", "_fft_c2c")
USE_EMULATOR = pytest.mark.usefixtures("emulated_cuda")
NEEDS_GXX = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator")


def emulated(test):
    """Run ``test`` with ``cuda`` served by the CPU emulator."""
    return USE_EMULATOR(NEEDS_GXX(test))


class _NoLibrary:
    device_type = "cuda"

    def make_fft(self):
        raise OSError("cuFFT did not load (libcufft.so: not found)")


def test_missing_library_leaves_the_rows_to_the_cpu_fallback():
    from ember_backend_gpu.kernels import fft

    with pytest.warns(RuntimeWarning, match="cuFFT did not load.*ember.fft's transforms run on"):
        assert fft.build(_NoLibrary()) == {}


@emulated
@pytest.mark.parametrize("name", ROWS)
def test_fft_rows_are_native_on_the_emulator(name):
    cuda, cpu = REGISTRY.backend("cuda"), REGISTRY.backend("cpu")
    assert coverage.classify(OPS[name], cuda, cpu) == "native"


@emulated
class TestEmulated:
    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_transforms_match_torch(self, dtype):
        rng = np.random.default_rng(3)
        x = rng.standard_normal((4, 6, 10)).astype(dtype)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
        xe, xt = ember.tensor(x, device="cuda"), torch.tensor(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a CPU fallback would warn
            cases = [
                (ember.fft.rfft(xe), torch.fft.rfft(xt)),
                (ember.fft.fft2(xe, norm="ortho"), torch.fft.fft2(xt, norm="ortho")),
                (ember.fft.rfftn(xe, dim=(0, 2)), torch.fft.rfftn(xt, dim=(0, 2))),
                (ember.fft.ifft(xe, dim=0), torch.fft.ifft(xt, dim=0)),
            ]
            spectrum = ember.fft.rfftn(xe, dim=(0, 2))
            back = ember.fft.irfftn(spectrum, s=(4, 10), dim=(0, 2), norm="backward")
        for got, want in cases:
            assert got.device.type == "cuda"
            assert str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
            np.testing.assert_allclose(
                ember.view_as_real(got.resolve_conj()).cpu().numpy(),
                torch.view_as_real(want.resolve_conj()).numpy(),
                **tol,
            )
        np.testing.assert_allclose(back.cpu().numpy(), x, **tol)

    # cuFFT refuses a data pointer not aligned to its complex type (CUFFT_INVALID_VALUE, seen on
    # an H200 for a float64 slice at an odd offset); the emulator checks the same, so each case
    # here failed before the glue padded such real data: a slice's start, and the host loop's
    # blocks of an odd size on either side (rfft's input, irfft's output).
    @pytest.mark.parametrize(
        "shape, dims, start",
        [
            ((15,), (0,), 1),
            ((2, 5, 3), (1,), 0),
            ((3, 5, 7, 3), (1, 2), 0),
            ((4, 5, 3, 3), (1,), 1),
            ((4, 5, 3, 3), (1, 2), 1),
        ],
    )
    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_real_data_at_unaligned_addresses(self, shape, dims, start, dtype):
        x = np.random.default_rng(5).standard_normal(shape).astype(dtype)
        xe, xt = ember.tensor(x, device="cuda")[start:], torch.tensor(x)[start:]
        sizes = [xt.shape[d] for d in dims]
        got, want = ember.fft.rfftn(xe, dim=dims), torch.fft.rfftn(xt, dim=dims)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(
            ember.view_as_real(got).cpu().numpy(), torch.view_as_real(want).numpy(), **tol
        )
        back = ember.fft.irfftn(got, s=sizes, dim=dims)
        np.testing.assert_allclose(back.cpu().numpy(), x[start:], **tol)
