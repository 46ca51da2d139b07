"""ember.fft's real-valued parts and the window functions against PyTorch, on every device (the
transforms: tests/fft/test_fft_transforms.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.fft

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
LENGTHS = [0, 1, 2, 3, 5, 8, 33]


def _torch_dtype(dtype):
    return getattr(torch, dtype.name)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=lambda d: d.name)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("name", WINDOWS)
def test_window_matches_torch(name, periodic, dtype, device):
    for n in LENGTHS:
        got = getattr(ember, name)(n, periodic, dtype=dtype, device=device)
        want = getattr(torch, name)(n, periodic, dtype=_torch_dtype(dtype))
        assert got.dtype is dtype and got.device.type == device
        # float32: PyTorch's cos/i0 and ember's may differ in the last bit
        np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_window_parameters_match_torch():
    got = ember.hamming_window(10, False, 0.6, 0.3, dtype=ember.float64)
    want = torch.hamming_window(10, False, 0.6, 0.3, dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)
    got = ember.kaiser_window(10, True, 5.0, dtype=ember.float64)
    want = torch.kaiser_window(10, True, 5.0, dtype=torch.float64)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


def test_window_defaults_and_errors():
    assert ember.hann_window(4).dtype is ember.get_default_dtype()
    assert ember.hann_window(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="non-negative window_length, got window_length=-1"):
        ember.hann_window(-1)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        ember.bartlett_window(4, dtype=ember.int64)


@pytest.mark.parametrize("d", [1.0, 0.25, 3.0])
def test_frequencies_match_torch(d, device):
    for n in [0, 1, 2, 5, 8, 9]:
        for name in ("fftfreq", "rfftfreq"):
            for dtype in (ember.float32, ember.float64):
                got = getattr(ember.fft, name)(n, d, dtype=dtype, device=device)
                want = getattr(torch.fft, name)(n, d, dtype=_torch_dtype(dtype))
                assert got.dtype is dtype
                np.testing.assert_array_equal(got.cpu().numpy(), want.numpy(), err_msg=name)


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), [2, 1, 0]])
def test_shifts_match_torch(dim, device):
    x = np.arange(5 * 6 * 7, dtype=np.float32).reshape(5, 6, 7)
    for name in ("fftshift", "ifftshift"):
        got = getattr(ember.fft, name)(ember.tensor(x, device=device), dim=dim)
        want = getattr(torch.fft, name)(torch.tensor(x), dim=dim)
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy(), err_msg=f"{name} {dim}")
    back = ember.fft.ifftshift(ember.fft.fftshift(ember.tensor(x), dim), dim)
    np.testing.assert_array_equal(back.numpy(), x)


def test_namespace_is_torchs():
    missing = sorted(set(torch.fft.__all__) - set(dir(ember.fft)) - {"Tensor"})
    assert not missing, f"ember.fft lacks {missing}"
