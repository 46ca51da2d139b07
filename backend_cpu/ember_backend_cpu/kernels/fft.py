"""FFT kernels: numpy's pocketfft (``numpy.fft``) on the tensors' memory, without copies in or out
beyond what pocketfft makes.

numpy >= 2 computes float32 / complex64 in single precision (numpy 1 promoted to double): the
plugin requires numpy >= 2 already, so float32 stays float32 here. pocketfft is the FFT numpy and
SciPy ship (SciPy's is the same C++ library with more threads); using numpy's adds no dependency
to the plugin. Complex tensors are their real view, a trailing dim of 2 (see the runner,
ember's dispatcher/kinds/fft.py).

SciPy's ``scipy.fft`` is preferred when it is installed (the plugin lists it as a dependency): it is
the same pocketfft, but it caches the plans (twiddle factors) between calls, which numpy 2's does
not, so a repeated 1M-point transform takes about a third of numpy's time (benchmarks/bench_fft.py).
numpy's stays the fallback. A transform over one dim calls the 1-d function, which skips the n-d
wrapper's argument handling.
"""

from __future__ import annotations

import numpy as np

from ._args import array_view

try:  # pocketfft with a plan cache (see the module docstring)
    import scipy.fft as FFT
except ImportError:  # pragma: no cover - scipy is a dependency of the plugin
    FFT = np.fft

NP_DTYPES = {"float32": np.float32, "float64": np.float64}
NORM_FORWARD = ("backward", "ortho", "forward")
NORM_INVERSE = ("forward", "ortho", "backward")


def _array(t) -> np.ndarray:
    """A numpy view of tensor ``t``'s memory (any strides)."""
    return array_view(t, np.dtype(NP_DTYPES[t._dtype.name]))


def _complex(x: np.ndarray) -> np.ndarray:
    ctype = np.complex64 if x.dtype == np.float32 else np.complex128
    if x.strides[-1] == x.itemsize and x.flags.c_contiguous:
        return x.view(ctype)[..., 0]
    return (x[..., 0] + 1j * x[..., 1]).astype(ctype)


def _store(out, z: np.ndarray) -> None:
    target = _array(out)
    if np.iscomplexobj(z):
        target = target.view(np.complex64 if target.dtype == np.float32 else np.complex128)
        target = target[..., 0]
    np.copyto(target, z, casting="same_kind")


def _along(one_dim, many_dims, a, dims, norm):
    """The transform of ``a`` over ``dims``: one dim through the 1-d function (the n-d entry
    point costs more for the same transform)."""
    if len(dims) == 1:
        return one_dim(a, axis=dims[0], norm=norm)
    return many_dims(a, axes=dims, norm=norm)


def r2c(out, x, dims, normalization, onesided):
    a = _array(x)
    norm = NORM_FORWARD[normalization]
    one_dim, many_dims = (FFT.rfft, FFT.rfftn) if onesided else (FFT.fft, FFT.fftn)
    _store(out, _along(one_dim, many_dims, a, dims, norm))


def c2r(out, x, dims, normalization, last_dim_size):
    z = _complex(_array(x))
    norm = NORM_INVERSE[normalization]
    if len(dims) == 1:
        _store(out, FFT.irfft(z, last_dim_size, axis=dims[0], norm=norm))
        return
    sizes = [z.shape[d] for d in dims[:-1]] + [last_dim_size]
    _store(out, FFT.irfftn(z, s=sizes, axes=dims, norm=norm))


def c2c(out, x, dims, normalization, forward):
    z = _complex(_array(x))
    norm = (NORM_FORWARD if forward else NORM_INVERSE)[normalization]
    one_dim, many_dims = (FFT.fft, FFT.fftn) if forward else (FFT.ifft, FFT.ifftn)
    _store(out, _along(one_dim, many_dims, z, dims, norm))


def build(ffi, lib) -> dict:
    kernels = {"_fft_r2c": r2c, "_fft_c2r": c2r, "_fft_c2c": c2c}
    return {name: dict.fromkeys(NP_DTYPES, fn) for name, fn in kernels.items()}
