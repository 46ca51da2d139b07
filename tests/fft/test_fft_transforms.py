"""ember.fft's transforms, stft/istft and ember.signal.windows against PyTorch: values and dtypes
in every norm mode on every device (float32 stays complex64/float32), gradients by gradcheck in
float64 (complex inputs and outputs through real views), and PyTorch's errors. The OpInfo suite
checks PyTorch's own samples; this file covers the norm modes and gradients it does not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.fft
from ember.autograd import gradcheck

# name: (input is complex, size argument: None, an n, or an s)
TRANSFORMS = {
    "fft": (True, 6),
    "ifft": (True, None),
    "rfft": (False, 7),
    "irfft": (True, 9),
    "hfft": (True, None),
    "ihfft": (False, 5),
    "fft2": (True, (3, 5)),
    "ifft2": (False, None),
    "rfft2": (False, None),
    "irfft2": (True, (4, -1)),
    "hfft2": (True, None),
    "ihfft2": (False, (3, 4)),
    "fftn": (False, None),
    "ifftn": (True, (2, 4, 3)),
    "rfftn": (False, (4, 6)),
    "irfftn": (True, None),
    "hfftn": (True, (3, 6)),
    "ihfftn": (False, None),
}
NORMS = [None, "backward", "ortho", "forward"]
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


def _input(rng, complex_input: bool, dtype: str, shape=(2, 4, 5)):
    x = rng.standard_normal(shape).astype(dtype)
    if complex_input:
        x = x + 1j * rng.standard_normal(shape).astype(dtype)
    return x


def _numpy(t) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.resolve_conj().numpy()
    return t.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name, dtype, device, rng):
    complex_input, size = TRANSFORMS[name]
    x = _input(rng, complex_input, dtype)
    for norm in NORMS:
        got = getattr(ember.fft, name)(ember.tensor(x, device=device), size, norm=norm)
        want = getattr(torch.fft, name)(torch.tensor(x), size, norm=norm)
        assert got.dtype.name == str(want.dtype).split(".")[-1], (name, norm)
        assert tuple(got.shape) == tuple(want.shape) and got.device.type == device
        np.testing.assert_allclose(_numpy(got), _numpy(want), **TOL[dtype], err_msg=str(norm))


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_gradients(name, rng):
    complex_input, size = TRANSFORMS[name]
    x = ember.tensor(_input(rng, complex_input, "float64", (2, 3, 4))).requires_grad_()
    fn = getattr(ember.fft, name)
    for norm in ("backward", "ortho"):
        assert gradcheck(lambda t, norm=norm: fn(t, size, norm=norm), (x,)), norm


def test_integer_input_and_out(rng):
    got = ember.fft.fft(ember.arange(6))
    want = torch.fft.fft(torch.arange(6))
    assert got.dtype is ember.complex64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    out = ember.empty(1, dtype=ember.complex64)
    assert ember.fft.rfft(ember.ones(8), out=out) is out and tuple(out.shape) == (5,)


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda m: m.fft.fft(m.ones(4), norm="bad"), RuntimeError, 'Invalid normalization mode'),
        (lambda m: m.fft.rfft(m.ones(3, dtype=m.complex64)), RuntimeError, "rfft expects a real"),
        (lambda m: m.fft.fft(m.ones(4), n=0), RuntimeError, r"Invalid number of data points \(0\)"),
        (lambda m: m.fft.fftn(m.ones(4), dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
        (lambda m: m.fft.irfftn(m.ones(4), s=(2, 3)), RuntimeError, "Got shape with 2 values"),
        (lambda m: m.fft.fft(m.tensor(1.0)), IndexError, "Dimension specified as -1"),
        (lambda m: m.fft.irfft(m.ones(1)), RuntimeError, r"Invalid number of data points \(0\)"),
    ],
)  # fmt: skip
def test_errors_match_torch(call, error, message):
    with pytest.raises(error, match=message):
        call(torch)
    with pytest.raises(error, match=message):
        call(ember)


STFT_CASES = [
    dict(n_fft=16, hop_length=4),
    dict(n_fft=16, win_length=10, window="hann", pad_mode="constant", normalized=True),
    dict(n_fft=8, center=False, onesided=False),
]


def _stft_args(kwargs, lib, dtype):
    args = dict(kwargs)
    if args.get("window") == "hann":
        args["window"] = lib.hann_window(args["win_length"], dtype=getattr(lib, dtype))
    return args


@pytest.mark.parametrize("case", range(len(STFT_CASES)))
def test_stft_istft_match_torch(case, device, rng):
    kwargs = STFT_CASES[case]
    x = rng.standard_normal((2, 40))
    want = torch.stft(torch.tensor(x), **_stft_args(kwargs, torch, "float64"), return_complex=True)
    e_args = _stft_args(kwargs, ember, "float64")
    if "window" in e_args:
        e_args["window"] = e_args["window"].to(device)
    got = ember.stft(ember.tensor(x, device=device), **e_args, return_complex=True)
    np.testing.assert_allclose(_numpy(got), want.numpy(), rtol=1e-10, atol=1e-10)
    assert got.stride() == want.stride()  # the transposed view, not a packed copy
    inverse = dict(kwargs, length=40)
    inverse.pop("pad_mode", None)
    back = torch.istft(want, **_stft_args(inverse, torch, "float64"))
    e_inv = _stft_args(inverse, ember, "float64")
    if "window" in e_inv:
        e_inv["window"] = e_inv["window"].to(device)
    mine = ember.istft(got, **e_inv)
    np.testing.assert_allclose(_numpy(mine), back.numpy(), rtol=1e-10, atol=1e-10)


def test_stft_istft_gradients(rng):
    x = ember.tensor(rng.standard_normal(24)).requires_grad_()
    window = ember.hann_window(8, dtype=ember.float64)
    assert gradcheck(lambda t: ember.stft(t, 8, 2, window=window, return_complex=True), (x,))
    spec = ember.stft(x.detach(), 8, 2, window=window, return_complex=True).requires_grad_()
    assert gradcheck(lambda s: ember.istft(s, 8, 2, window=window, length=24), (spec,))


def test_stft_requires_return_complex_for_real_input():
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        ember.stft(ember.ones(16), 8)


WINDOWS = {
    "bartlett": {},
    "blackman": {},
    "cosine": {},
    "exponential": {"tau": 2.0},
    "gaussian": {"std": 0.7},
    "general_cosine": {"a": [0.46, 0.23, 0.31]},
    "general_hamming": {"alpha": 0.6},
    "hamming": {},
    "hann": {},
    "kaiser": {"beta": 4.0},
    "nuttall": {},
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_signal_windows_match_torch(name, device):
    for m in (0, 1, 2, 7, 10):
        for sym in (True, False):
            for dtype in ("float32", "float64"):
                got = getattr(ember.signal.windows, name)(
                    m, sym=sym, dtype=getattr(ember, dtype), device=device, **WINDOWS[name]
                )
                want = getattr(torch.signal.windows, name)(
                    m, sym=sym, dtype=getattr(torch, dtype), **WINDOWS[name]
                )
                assert got.dtype.name == dtype and got.device.type == device
                np.testing.assert_allclose(_numpy(got), want.numpy(), rtol=2e-6, atol=1e-7)


def test_signal_window_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(
            ValueError, match="general_cosine requires non-negative window length, got M=-1"
        ):
            lib.signal.windows.hann(-1)
        with pytest.raises(ValueError, match="blackman requires non-negative window length"):
            lib.signal.windows.blackman(-1)
        with pytest.raises(ValueError, match="expects float32 or float64 dtypes"):
            lib.signal.windows.cosine(3, dtype=lib.int64)
        with pytest.raises(ValueError, match="Tau must be positive"):
            lib.signal.windows.exponential(3, tau=0.0)


@pytest.mark.parametrize("align", [None, False, True])
@pytest.mark.parametrize("n_fft, win, hop", [(16, 8, 4), (16, 9, 3), (10, 7, 2)])
def test_stft_align_to_window_matches_torch(align, n_fft, win, hop):
    signal = np.random.default_rng(0).standard_normal((2, 64))
    outs = []
    for lib in (ember, torch):
        window = lib.hann_window(win, dtype=lib.float64)
        outs.append(
            lib.stft(
                lib.tensor(signal), n_fft, hop_length=hop, win_length=win, window=window,
                center=False, return_complex=True, align_to_window=align,
            ).numpy()
        )  # fmt: skip
    assert outs[0].shape == outs[1].shape
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10, atol=1e-10)


def test_stft_align_to_window_with_center_is_refused_as_torch_refuses_it():
    with pytest.raises(RuntimeError) as theirs:
        torch.stft(torch.ones(32), 8, return_complex=True, align_to_window=True)
    with pytest.raises(RuntimeError, match=str(theirs.value)):
        ember.stft(ember.ones(32), 8, return_complex=True, align_to_window=True)
