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
