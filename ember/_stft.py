"""The short-time Fourier transform and its inverse, PyTorch's ``stft``/``istft``: compositions
as ATen's (``SpectralOps.cpp``): frames as an ``unfold`` view, the window, the ``_fft_r2c`` /
``_fft_c2c`` / ``_fft_c2r`` rows over the frames, and for ``istft`` the overlap-add (an
``index_add``, what ATen's ``unfold_backward`` computes) divided by the window's envelope.
"""

from __future__ import annotations

import ember as E

from ._fft import BY_N, BY_ROOT_N, NONE, as_complex, is_complex
from ._tensor import Tensor

_WARNED = set()


def _repr(name, x, n_fft, hop_length, win_length, window, normalized, onesided, rc) -> str:
    """ATen's REPR: the call, as the errors show it."""
    shown = "None" if window is None else f"{_kind(window)}{{{list(window.shape)}}}"
    return (
        f"{name}({_kind(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
        f"win_length={win_length}, window={shown}, normalized={int(normalized)}, "
        f"onesided={'None' if onesided is None else int(onesided)}, return_complex={int(rc)})"
    )


def _kind(x: Tensor) -> str:
    names = {"float32": "Float", "float64": "Double", "complex64": "ComplexFloat"}
    names["complex128"] = "ComplexDouble"
    return f"{x.device.type.upper()}{names.get(x.dtype.name, x.dtype.name)}Type"


def _centered_window(window, n_fft: int, win_length: int, like: Tensor):
    """The window zero-padded on both sides to n_fft (ones when None), ATen's centring."""
    if window is None:
        if win_length == n_fft:
            return None
        window = E.ones(win_length, dtype=like.dtype, device=like.device)
    left = (n_fft - win_length) // 2
    if left or n_fft - win_length - left:
        window = E.nn.functional.pad(window, [left, n_fft - win_length - left])
    return window


def stft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided: bool | None = None,
    return_complex: bool | None = None,
    align_to_window: bool | None = None,
) -> Tensor:
    """Short-time Fourier transform: the FFT of ``n_fft``-point frames ``hop_length`` apart.

    Args:
        input: a 1-d signal or a 2-d batch of signals, real or complex.
        n_fft: the frames' FFT size. hop_length: frame step (``n_fft // 4``).
        win_length, window: the window (``win_length`` points, centred in ``n_fft``; none).
        center: pad ``n_fft // 2`` on both sides (``pad_mode``) so frames centre on ``t hop``.
        normalized: scale by ``1/sqrt(n_fft)``. onesided: the half spectrum (real inputs).
        return_complex: a complex result (required for real inputs, as PyTorch).
        align_to_window: with ``center=False``, True starts each frame's window (rather than
            its ``n_fft`` points) ``hop_length`` apart: frames run to the signal's ends, as if
            it were zero-padded by the window's offset in the frame.

    Shape:
        ``(*, freq, frames)`` with ``freq = n_fft // 2 + 1`` when one-sided, else ``n_fft``.

    Example:
        >>> ember.stft(ember.ones(8), 4, return_complex=True).shape
        ember.Size([3, 9])
    """
    complex_in = is_complex(input) or (window is not None and is_complex(window))
    rc = complex_in if return_complex is None else return_complex
    if not rc and return_complex is None:
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs, and will "
            "further require that return_complex=True in a future PyTorch release."
        )
    if not rc:
        _warn_once(
            "stft with return_complex=False is deprecated. In a future pytorch release, stft "
            "will return complex tensors for all inputs, and return_complex=False will raise "
            "an error."
        )
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        input = _pad_ends(input, n_fft // 2, pad_mode)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if align_to_window:  # the window's offset in the frame, as zeros on both ends
        left = (n_fft - win) // 2
        input = E.nn.functional.pad(input, (left, n_fft - win - left))
    call = (input, n_fft, hop, win, window, normalized, onesided, rc)
    frames = _frames(input, n_fft, hop, win, window, call)
    complex_fft = is_complex(frames)
    sided = not complex_fft if onesided is None else onesided
    code = BY_ROOT_N if normalized else NONE
    if complex_fft:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = E.ops._fft_c2c(E.view_as_real(frames.resolve_conj()), [-1], code, True)
    else:
        out = E.ops._fft_r2c(frames, [-1], code, sided)
    out = out.transpose(1, 2)  # (batch, freq, frames, 2)
    if input.ndim == 1:
        out = out.squeeze(0)
    # The transposed view, as PyTorch returns it (strides (1, freq)): packing it costed 10x the
    # FFT itself on 1M samples
    return E.view_as_complex(out) if rc else out


def _pad_ends(x: Tensor, pad: int, mode: str) -> Tensor:
    """PyTorch's centring: ``F.pad`` of the signal seen as (1, 1, L) or (1, B, L); a complex
    signal's real and imaginary parts separately (pad's reflect has real kernels only)."""
    if is_complex(x):
        r = E.view_as_real(x.resolve_conj())
        return as_complex(E.stack([_pad_ends(r[..., i], pad, mode) for i in (0, 1)], -1))
    extended = x.view([1] * (3 - x.ndim) + list(x.shape))
    padded = E.nn.functional.pad(extended, [pad, pad], mode)
    return padded.view(padded.shape[-x.ndim :])


def _frames(input, n_fft, hop, win, window, call) -> Tensor:
    """The (batch, frames, n_fft) frames of the signal, windowed, after ATen's checks."""
    if not (input.dtype.is_floating_point or is_complex(input)):
        raise RuntimeError(
            f"{_repr('stft', *call)}: expected a tensor of floating point or complex values"
        )
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{_repr('stft', *call)}: expected a 1D or 2D tensor")
    signal = input.unsqueeze(0) if input.ndim == 1 else input
    length = signal.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(
            f"{_repr('stft', *call)}: expected 0 < n_fft < {length}, but got n_fft={win}"
        )
    if hop <= 0:
        raise RuntimeError(f"{_repr('stft', *call)}: expected hop_length > 0, but got {hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(
            f"{_repr('stft', *call)}: expected 0 < win_length <= n_fft, but got win_length={win}"
        )
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(
            f"{_repr('stft', *call)}: expected a 1D window tensor of size equal to "
            f"win_length={win}, but got window with size {list(window.shape)}"
        )
    frames = signal.unfold(-1, n_fft, hop)
    window = _centered_window(window, n_fft, win, signal)
    return frames if window is None else frames * window


def istft(
    input: Tensor,
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: bool = True,
    normalized: bool = False,
    onesided: bool | None = None,
    length: int | None = None,
    return_complex: bool = False,
) -> Tensor:
    """Inverse short-time Fourier transform: the inverse FFT of each frame, windowed,
    overlap-added and divided by the window's squared envelope (least squares, as PyTorch).

    Args:
        input: a complex ``(*, freq, frames)`` spectrogram, as ``stft(return_complex=True)``.
        n_fft, hop_length, win_length, window, center, normalized, onesided: as ``stft``.
        length: the signal's length (trimmed or zero-padded to it).
        return_complex: a complex signal (two-sided input only).

    Example:
        >>> x = ember.arange(16.0)
        >>> w = ember.hann_window(8)
        >>> spec = ember.stft(x, 8, 2, window=w, return_complex=True)
        >>> ember.allclose(ember.istft(spec, 8, 2, window=w, length=16), x, atol=1e-5)
        True
    """
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if not is_complex(input):
        raise RuntimeError(
            "istft requires a complex-valued input tensor matching the output from stft with "
            "return_complex=True."
        )
    spec = E.view_as_real(input.resolve_conj())
    call = (spec, n_fft, hop, win, window, normalized, onesided, return_complex)
    sided = _istft_checks(spec, n_fft, hop, win, window, onesided, call)
    frames_count = spec.shape[-2]
    total = n_fft + hop * (frames_count - 1)
    if spec.ndim == 3:
        spec = spec.unsqueeze(0)
    spec = spec.transpose(1, 2)  # (channel, frames, freq, 2)
    code = BY_ROOT_N if normalized else BY_N
    if return_complex:
        if sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = E.ops._fft_c2c(spec, [-1], code, False)  # (channel, frames, n_fft, 2)
    else:
        if window is not None and is_complex(window):
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not sided:
            spec = spec.narrow(-2, 0, n_fft // 2 + 1)
        frames = E.ops._fft_c2r(spec, [-1], code, n_fft)  # (channel, frames, n_fft)
    if return_complex:
        frames = as_complex(frames)
    real_dtype = spec.dtype
    window = _centered_window(window, n_fft, win, E.empty(0, dtype=real_dtype, device=spec.device))
    if window is None:
        window = E.ones(n_fft, dtype=real_dtype, device=spec.device)
    y = _overlap_add(frames * window, hop, total)
    envelope = _overlap_add((window * window).expand(1, frames_count, n_fft), hop, total)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    y = y.narrow(1, start, max(min(end, total) - start, 0))
    envelope = envelope.narrow(1, start, max(min(end, total) - start, 0))
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(
            "istft: window overlap add min: the window's squared envelope is zero (below 1e-11) "
            "somewhere: the signal cannot be recovered (NOLA fails)"
        )
    y = y / envelope
    if input.ndim == 2:
        y = y.squeeze(0)
    if end > total:
        _warn_once(
            "The length of signal is shorter than the length parameter. Result is being "
            "padded with zeros in the tail. Please check your center and hop_length "
            "settings."
        )
        y = _pad_tail(y, end - total)
    return y


def _istft_checks(spec, n_fft, hop, win, window, onesided, call) -> bool:
    """ATen's argument checks of istft; whether the input is one-sided."""
    fft_size = spec.shape[-3] if spec.ndim >= 3 else 0
    if spec.numel() == 0:
        raise RuntimeError(f"{_repr('istft', *call)}: input tensor cannot be empty.")
    if spec.ndim not in (3, 4):
        raise RuntimeError(
            f"{_repr('istft', *call)}: expected a tensor with 3 or 4 dimensions of complex, "
            f"but got {spec.ndim}"
        )
    sided = fft_size != n_fft if onesided is None else onesided
    want, what = (n_fft // 2 + 1, "n_fft / 2 + 1") if sided else (n_fft, "n_fft")
    if fft_size != want:
        raise RuntimeError(
            f"{_repr('istft', *call)}: expected the frequency dimension (3rd to the last) of the "
            f"input tensor to match {what} when onesided={sided!s}, but got {fft_size}"
        )
    if not 0 < hop <= win:
        raise RuntimeError(f"{_repr('istft', *call)}: expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{_repr('istft', *call)}: expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise RuntimeError(
            f"{_repr('istft', *call)}: Invalid window shape. window has to be 1D and length of "
            "`win_length`"
        )
    return sided


def _overlap_add(frames: Tensor, hop: int, total: int) -> Tensor:
    """The sum of (channel, frames, n_fft) frames placed ``hop`` apart in ``total`` points:
    ATen's unfold_backward, as an index_add over the flattened frames (of the real view of
    complex frames: index_add has real kernels only)."""
    if is_complex(frames):
        return as_complex(_overlap_add(E.view_as_real(frames.contiguous()), hop, total))
    channels, count, n_fft = frames.shape[:3]
    rest = list(frames.shape[3:])
    start = E.arange(count, device=frames.device).unsqueeze(1) * hop
    index = (start + E.arange(n_fft, device=frames.device)).reshape(-1)
    flat = frames.reshape([channels, count * n_fft, *rest])
    zeros = E.zeros([channels, total, *rest], dtype=frames.dtype, device=frames.device)
    return zeros.index_add(1, index, flat)


def _pad_tail(y: Tensor, extra: int) -> Tensor:
    """``y`` with ``extra`` zeros after its last dim (on the real view of a complex ``y``)."""
    if is_complex(y):
        return as_complex(_pad_tail(E.view_as_real(y).movedim(-1, 0), extra).movedim(0, -1))
    shape = [*y.shape[:-1], extra]
    return E.cat((y, E.zeros(shape, dtype=y.dtype, device=y.device)), -1)


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        import warnings

        warnings.warn(message, UserWarning, stacklevel=3)


FUNCTIONS = {"stft": stft, "istft": istft}
METHODS = {"stft": stft, "istft": istft}
