"""ember.fft: PyTorch's ``torch.fft``.

The transforms (``fft``, ``rfft``, ``irfft``, ``hfft`` and their inverses, 2-d and n-d forms)
are compositions over the primitive rows ``_fft_r2c``, ``_fft_c2r``, ``_fft_c2c``
(``ember/_fft.py``); ``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift`` are real helpers.

Example:
    >>> ember.fft.fftfreq(5)
    tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from . import _dtype as dt
from . import _fft
from ._factories import _no_layout, arange

# name: (composition, forward, the default dim: one int for the 1-d forms, a tuple for 2-d, None
# for n-d); the 1-d forms take n, the others s
_TRANSFORMS = {
    "fft": (_fft.c2c, True, -1),
    "ifft": (_fft.c2c, False, -1),
    "fft2": (_fft.c2c, True, (-2, -1)),
    "ifft2": (_fft.c2c, False, (-2, -1)),
    "fftn": (_fft.c2c, True, None),
    "ifftn": (_fft.c2c, False, None),
    "rfft": (_fft.r2c, True, -1),
    "irfft": (_fft.c2r, False, -1),
    "rfft2": (_fft.r2c, True, (-2, -1)),
    "irfft2": (_fft.c2r, False, (-2, -1)),
    "rfftn": (_fft.r2c, True, None),
    "irfftn": (_fft.c2r, False, None),
    "hfft": (_fft.c2r, True, -1),
    "ihfft": (_fft.r2c, False, -1),
    "hfft2": (_fft.c2r, True, (-2, -1)),
    "ihfft2": (_fft.r2c, False, (-2, -1)),
    "hfftn": (_fft.c2r, True, None),
    "ihfftn": (_fft.r2c, False, None),
}
_KIND = {_fft.c2c: "complex to complex", _fft.r2c: "real to complex (one-sided)"}


def _transform(name: str, compose, forward: bool, default_dim):
    one_dim = isinstance(default_dim, int)
    if one_dim:

        def transform(input, n=None, dim=-1, norm=None, *, out=None):
            return compose(name, input, n, dim, norm, forward, out, True)

        size = "n: the signal's length along ``dim`` (zero-padded or trimmed to it)"
    else:

        def transform(input, s=None, dim=default_dim, norm=None, *, out=None):
            return compose(name, input, s, dim, norm, forward, out, False)

        size = "s: the signal's sizes along ``dim`` (zero-padded or trimmed to them)"
    kind = _KIND.get(compose, "Hermitian half to real")
    transform.__name__ = transform.__qualname__ = name
    transform.__module__ = "ember.fft"
    transform.__doc__ = (
        f"torch.fft.{name}: the {'forward' if forward else 'inverse'} discrete Fourier "
        f"transform, {kind}, over ``_fft_*`` primitive rows.\n\n    Args:\n        {size}.\n"
        '        dim: the dims transformed.\n        norm: ``"backward"`` (default), '
        '``"ortho"`` or ``"forward"``: which direction is scaled by 1/n (both by '
        "1/sqrt(n) for ortho).\n\n    Example:\n        >>> ember.fft.rfft(ember.ones(4))\n"
        "        tensor([4.+0.j, 0.+0.j, 0.+0.j])\n"
    )
    return transform


for _name, _spec in _TRANSFORMS.items():
    globals()[_name] = _transform(_name, *_spec)
del _name, _spec


def _frequencies(name, count, n, d, dtype, layout, device):
    _no_layout(name, layout)
    if n < 0:
        raise RuntimeError(f"{name}: n must be non-negative, got {n}")
    dtype = dtype or dt.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} requires a floating point dtype, got {dtype}")
    k = arange(count, dtype=dtype, device=device)
    return k, 1.0 / (n * d) if n * d else math.inf  # PyTorch: 0 * inf gives NaN


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """The sample frequencies of ``fft`` of a signal of size ``n`` with sample spacing ``d``:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n)``.

    Example:
        >>> ember.fft.fftfreq(4, d=0.5)
        tensor([ 0.0000,  0.5000, -1.0000, -0.5000])
    """
    k, scale = _frequencies("fftfreq", n, n, d, dtype, layout, device)
    # PyTorch's order of operations: the negative half shifted, then one multiplication
    k = k.where(k <= (n - 1) // 2, k - n) * scale
    return _finish(k, out, requires_grad)


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
):
    """The sample frequencies of ``rfft`` of a signal of size ``n``: ``[0, 1, ..., n // 2] /
    (d n)``.

    Example:
        >>> ember.fft.rfftfreq(5)
        tensor([0.0000, 0.2000, 0.4000])
    """
    k, scale = _frequencies("rfftfreq", n // 2 + 1, n, d, dtype, layout, device)
    return _finish(k * scale, out, requires_grad)


def _finish(result, out, requires_grad):
    if out is not None:
        out.resize_(result.shape).copy_(result)
        return out.requires_grad_(requires_grad) if requires_grad else out
    return result.requires_grad_(requires_grad)


def _shift(input, dim, sign: int):
    if dim is None:
        dims = tuple(range(input.ndim))
    elif isinstance(dim, int):
        dims = (dim,)
    else:
        dims = tuple(dim)
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    return input.roll(shifts, dims)


def fftshift(input, dim: int | Sequence[int] | None = None):
    """Moves the zero-frequency term to the centre: ``roll`` by ``n // 2`` along each of ``dim``
    (all dims by default).

    Example:
        >>> ember.fft.fftshift(ember.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1)


def ifftshift(input, dim: int | Sequence[int] | None = None):
    """The inverse of ``fftshift``: ``roll`` by ``-(n // 2)`` along each of ``dim``."""
    return _shift(input, dim, -1)


__all__ = sorted([*_TRANSFORMS, "fftfreq", "fftshift", "ifftshift", "rfftfreq"])
