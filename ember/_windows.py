"""Window functions for spectral analysis (``hann_window`` and friends), PyTorch's: the same
formulas, evaluated in the same order in the requested dtype, so float32 windows agree with
PyTorch's to the rounding of its cos and i0.

``periodic=True`` (the default) gives the window for spectral analysis: the symmetric window of
``window_length + 1`` points without its last point.
"""

from __future__ import annotations

import math

from . import _dtype as dt
from ._factories import _no_layout, arange, empty, ones


def _check(name: str, window_length: int, dtype) -> None:
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, build):
    """Checks, the length 0 and 1 cases, periodic trimming and requires_grad for every window."""
    _no_layout(name, layout)
    _check(name, window_length, dtype)
    dtype = dtype or dt.get_default_dtype()
    if window_length <= 1:
        make = empty if window_length == 0 else ones
        window = make(window_length, dtype=dtype, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        window = build(arange(n, dtype=dtype, device=device), n)
        if periodic:
            window = window[:-1].contiguous()
    return window.requires_grad_(requires_grad)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Hamming window ``alpha - beta cos(2 pi k / (N - 1))``.

    Args:
        window_length: the number of points returned.
        periodic: the periodic window (for spectral analysis) rather than the symmetric one.
        alpha, beta: the coefficients.

    Example:
        >>> ember.hamming_window(4, periodic=False)
        tensor([0.0800, 0.7700, 0.7700, 0.0800])
    """

    def build(k, n):
        return (k * (math.pi * 2.0 / (n - 1))).cos() * -beta + alpha

    return _window(
        "hamming_window", window_length, periodic, dtype, layout, device, requires_grad, build
    )


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Hann window ``0.5 - 0.5 cos(2 pi k / (N - 1))`` (``hamming_window`` with 0.5, 0.5).

    Example:
        >>> ember.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    _no_layout("hann_window", layout)
    _check("hann_window", window_length, dtype)
    return hamming_window(
        window_length,
        periodic,
        0.5,
        0.5,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Blackman window ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``.

    Example:
        >>> ember.blackman_window(3, periodic=False)
        tensor([-1.4901e-08,  1.0000e+00, -1.4901e-08])
    """

    def build(k, n):
        w = k * (math.pi / (n - 1))
        return (w * 4).cos() * 0.08 - (w * 2).cos() * 0.5 + 0.42

    return _window(
        "blackman_window", window_length, periodic, dtype, layout, device, requires_grad, build
    )


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Bartlett (triangular) window ``1 - |2 k / (N - 1) - 1|``.

    Example:
        >>> ember.bartlett_window(5, periodic=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """

    def build(k, n):
        w = k * (2.0 / (n - 1))
        first_half = ((n - 1) >> 1) + 1
        return w.where(k < first_half, 2 - w)

    return _window(
        "bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, build
    )


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Kaiser window ``I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)``, ``a = (N - 1) / 2``.

    Example:
        >>> ember.kaiser_window(3, periodic=False, beta=1.0)
        tensor([0.7898, 1.0000, 0.7898])
    """

    def build(k, n):
        alpha = (n - 1) / 2.0
        ratio = (k - alpha) / alpha
        inner = (beta * (1 - ratio * ratio).abs().sqrt()).i0()
        return inner / inner.new_tensor(beta).i0()

    return _window(
        "kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, build
    )


FUNCTIONS = {
    "hamming_window": hamming_window,
    "hann_window": hann_window,
    "blackman_window": blackman_window,
    "bartlett_window": bartlett_window,
    "kaiser_window": kaiser_window,
}
