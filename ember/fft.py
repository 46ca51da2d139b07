"""ember.fft: PyTorch's ``torch.fft``.

The real-valued helpers are complete: ``fftfreq``, ``rfftfreq``, ``fftshift``, ``ifftshift``.
The transforms themselves (``fft``, ``rfft``, ``irfft``, ``hfft``...) take or return complex
tensors, and ember has no complex dtypes yet: they raise ``NotImplementedError`` naming the
function until complex64/complex128 land.

Example:
    >>> ember.fft.fftfreq(5)
    tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from . import _dtype as dt
from ._factories import arange

_TRANSFORMS = (
    "fft",
    "ifft",
    "fft2",
    "ifft2",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfft2",
    "irfft2",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "hfft2",
    "ihfft2",
    "hfftn",
    "ihfftn",
)


def _not_yet(name: str):
    def transform(input, *args, **kwargs):
        raise NotImplementedError(
            f"ember.fft.{name}: complex dtypes are not supported yet (complex64/complex128 are "
            f"coming); {name} takes or returns complex tensors"
        )

    transform.__name__ = transform.__qualname__ = name
    transform.__module__ = "ember.fft"
    transform.__doc__ = f"torch.fft.{name}: needs complex dtypes, which ember does not have yet."
    return transform


for _name in _TRANSFORMS:
    globals()[_name] = _not_yet(_name)
del _name


def _frequencies(name, count, n, d, dtype, device, requires_grad):
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
    k, scale = _frequencies("fftfreq", n, n, d, dtype, device, requires_grad)
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
    k, scale = _frequencies("rfftfreq", n // 2 + 1, n, d, dtype, device, requires_grad)
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
