"""ember.signal.windows: PyTorch's ``torch.signal.windows``, SciPy-style windows of ``M`` points.

Compositions of ``linspace`` and elementwise rows, in PyTorch's order of operations (the points
come from ``linspace`` in the requested dtype), so float32 windows round as PyTorch's do.
``sym=True`` (the default) gives the symmetric window for filter design; ``sym=False`` the
periodic one for spectral analysis.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ember as E
from ember import _dtype as dt

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _checks(name: str, M: int, dtype, layout) -> object:  # noqa: N803 - PyTorch's name
    """PyTorch's _window_function_checks; the dtype to build in."""
    dtype = dtype or dt.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and str(layout) not in ("torch.strided", "ember.strided", "strided"):
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dt.float32, dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _constant(M: int, dtype, device, requires_grad: bool):  # noqa: N803
    """The windows of 0 points (empty) and 1 point (one)."""
    make = E.empty if M == 0 else E.ones
    return make((M,), dtype=dtype, device=device, requires_grad=requires_grad)


def _points(start, end, M, dtype, device, requires_grad):  # noqa: N803
    return E.linspace(start, end, M, dtype=dtype, device=device, requires_grad=requires_grad)


def exponential(
    M: int,  # noqa: N803
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Exponential (Poisson) window ``exp(-|n - center| / tau)``.

    Example:
        >>> ember.signal.windows.exponential(3)
        tensor([0.3679, 1.0000, 0.3679])
    """
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _constant(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _points(-center * constant, (-center + (M - 1)) * constant, M, dtype, device, requires_grad)
    return E.exp(-E.abs(k))


def cosine(
    M: int,  # noqa: N803
    *,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Cosine (sine) window ``sin(pi (n + 0.5) / M)``.

    Example:
        >>> ember.signal.windows.cosine(3)
        tensor([0.5000, 1.0000, 0.5000])
    """
    dtype = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _constant(M, dtype, device, requires_grad)
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _points(0.5 * constant, (0.5 + (M - 1)) * constant, M, dtype, device, requires_grad)
    return E.sin(k)


def gaussian(
    M: int,  # noqa: N803
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Gaussian window ``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``.

    Example:
        >>> ember.signal.windows.gaussian(3)
        tensor([0.6065, 1.0000, 0.6065])
    """
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _constant(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _points(start * constant, (start + (M - 1)) * constant, M, dtype, device, requires_grad)
    return E.exp(-(k**2))


def kaiser(
    M: int,  # noqa: N803
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Kaiser window ``I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta)``.

    Example:
        >>> ember.signal.windows.kaiser(3, beta=1.0)
        tensor([0.7898, 1.0000, 0.7898])
    """
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _constant(M, dtype, device, requires_grad)
    # PyTorch computes the end points in the window's dtype, from a beta tensor
    beta = E.tensor(beta, dtype=dtype, device=device)
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = E.minimum(beta, start + (M - 1) * constant)
    k = _points(start, end, M, dtype, device, requires_grad)
    return E.i0(E.sqrt(beta * beta - E.pow(k, 2))) / E.i0(beta)


def bartlett(
    M: int,  # noqa: N803 - PyTorch's name
    *,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Bartlett (triangular) window ``1 - |2 n / (M - 1) - 1|``.

    Example:
        >>> ember.signal.windows.bartlett(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    dtype = _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _constant(M, dtype, device, requires_grad)
    constant = 2 / (M if not sym else M - 1)
    k = _points(-1, -1 + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - E.abs(k)


def general_cosine(
    M: int,  # noqa: N803
    *,
    a: Iterable,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Generalised cosine window ``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``.

    Example:
        >>> ember.signal.windows.general_cosine(3, a=[0.5, 0.5])
        tensor([0., 1., 0.])
    """
    dtype = _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _constant(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, (M - 1) * constant, M, dtype, device, requires_grad)
    coefficients = [(-1) ** i * w for i, w in enumerate(a)]
    a_i = E.tensor(coefficients, dtype=dtype, device=device, requires_grad=requires_grad)
    i = E.arange(a_i.shape[0], dtype=dtype, device=device, requires_grad=requires_grad)
    return (a_i.unsqueeze(-1) * E.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(
    M: int,  # noqa: N803
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """Generalised Hamming window ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``.

    Example:
        >>> ember.signal.windows.general_hamming(3, alpha=0.5)
        tensor([0., 1., 0.])
    """
    return general_cosine(
        M,
        a=[alpha, 1.0 - alpha],
        sym=sym,
        dtype=dtype,
        layout=layout,
        device=device,
        requires_grad=requires_grad,
    )


def _cosine_sum(name: str, coefficients: list, doc: str, own_checks: bool = False):
    """A fixed cosine-sum window; PyTorch checks M and dtype under the window's own name only
    for blackman (the others report general_cosine's)."""

    def window(M: int, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):  # noqa: N803
        if own_checks:
            _checks(name, M, dtype, layout)
        return general_cosine(
            M,
            a=coefficients,
            sym=sym,
            dtype=dtype,
            layout=layout,
            device=device,
            requires_grad=requires_grad,
        )

    window.__name__ = window.__qualname__ = name
    window.__doc__ = doc
    return window


hamming = _cosine_sum(
    "hamming", [0.54, 1.0 - 0.54], "Hamming window: ``general_hamming`` with 0.54."
)
hann = _cosine_sum("hann", [0.5, 0.5], "Hann window: ``general_hamming`` with 0.5.")
blackman = _cosine_sum(
    "blackman", [0.42, 0.5, 0.08], "Blackman window: cosine sum 0.42, 0.5, 0.08.", True
)
nuttall = _cosine_sum(
    "nuttall",
    [0.3635819, 0.4891775, 0.1365995, 0.0106411],
    "Nuttall window: the minimum 4-term Blackman-Harris cosine sum.",
)
