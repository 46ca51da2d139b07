"""FFT kernels: scipy's pocketfft binding (``scipy.fft._duccfft.pyduccfft`` from scipy 1.18,
``scipy.fft._pocketfft.pypocketfft`` before) on the tensors' memory.

Why that binding rather than ``scipy.fft``'s public functions or numpy.fft (all are pocketfft;
docs/fft.md "Speed" has the measurements): it writes into a given array (``out=``), so the result
lands in the output tensor without a copy; it scales inside the transform (``inorm``: 0 none, 1
by 1/sqrt(n), 2 by 1/n over the transformed sizes, which is exactly ATen's normalization code);
it takes a thread count per call, so ember's thread setting applies; it computes float32 in
float32 and keeps its plans between calls; it reads any strides, so a transposed or sliced
input is not packed. It is the module scipy.fft itself calls (present unchanged since scipy
1.4). ducc0.fft (pocketfft's successor, the same call form) was 1.3-1.8x faster on the large
cases but is GPL-2.0-or-later, which a BSD-3-Clause package cannot require.

Complex tensors are their real view, a trailing dim of 2 (see the runner, ember's
dispatcher/kinds/fft.py): here they are seen as numpy complex arrays over the same memory.
"""

from __future__ import annotations

import numpy as np

try:  # scipy >= 1.18 renamed the binding (the same BSD pocketfft code, now ducc's, same calls)
    from scipy.fft._duccfft import pyduccfft as pocketfft
except ImportError:
    from scipy.fft._pocketfft import pypocketfft as pocketfft

from ._args import addr, array_view, contiguous_array, strided_array

# Outputs (real or complex elements) from which a transform uses ember's threads.
_THREADED_ELEMENTS = 1 << 16
REAL = {"float32": np.float32, "float64": np.float64}
COMPLEX = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def _real(t) -> np.ndarray:
    """A numpy view of real tensor ``t``'s memory (any strides)."""
    return array_view(t, REAL[t._dtype.name])


def _complex(t) -> np.ndarray:
    """Tensor ``t``, a complex tensor's real view ``(..., 2)``, as a numpy complex array over the
    same memory where each (real, imaginary) pair is adjacent and the strides are whole pairs
    (pocketfft takes no other), at any offset (a complex number's alignment is its parts'); else as
    a complex copy."""
    real = np.dtype(REAL[t._dtype.name])
    complex_ = np.dtype(COMPLEX[real])
    if t._contig:
        return contiguous_array(addr(t), t._shape[:-1], complex_)
    if t._stride[-1] == 1 and all(s % 2 == 0 for s in t._stride[:-1]):
        strides = [s * real.itemsize for s in t._stride[:-1]]
        return strided_array(addr(t), t._shape[:-1], strides, complex_)
    x = _real(t)
    return (x[..., 0] + 1j * x[..., 1]).astype(complex_)


def _complex_out(out) -> np.ndarray:
    """The output tensor (contiguous, from ember's allocator: aligned) as a complex array over
    its memory, never a copy."""
    complex_ = np.dtype(COMPLEX[np.dtype(REAL[out._dtype.name])])
    return contiguous_array(addr(out), out._shape[:-1], complex_)


def kernels(lib) -> dict:
    """The three rows' kernels, closing over the compiled library for the thread count."""

    def common(dims, normalization, out) -> dict:
        # ember's thread setting (ember.set_num_threads), read on every call since a user may
        # change it between calls; pocketfft splits batches, starting its threads per call, which
        # costs more than a small transform (rfft of 64 x 512 at 2 threads: 0.093 ms against
        # 0.032 on one), so small outputs stay on the calling thread
        threads = lib.ember_num_threads() if out.numel() >= _THREADED_ELEMENTS else 1
        return {"axes": dims, "inorm": normalization, "nthreads": threads}

    def r2c(out, x, dims, normalization, onesided):
        # A two-sided r2c is pocketfft's c2c of the real input (a real FFT, then the Hermitian half)
        transform = pocketfft.r2c if onesided else pocketfft.c2c
        transform(_real(x), out=_complex_out(out), **common(dims, normalization, out))

    def c2r(out, x, dims, normalization, last_dim_size):
        options = common(dims, normalization, out)
        z = _complex(x)
        pocketfft.c2r(z, lastsize=last_dim_size, forward=False, out=_real(out), **options)

    def c2c(out, x, dims, normalization, forward):
        options = common(dims, normalization, out)
        pocketfft.c2c(_complex(x), forward=bool(forward), out=_complex_out(out), **options)

    return {"_fft_r2c": _nonempty(r2c), "_fft_c2r": _nonempty(c2r), "_fft_c2c": _nonempty(c2c)}


def _nonempty(kernel):
    """``kernel``, skipped where the output has no element (an empty batch: the runner has
    refused empty transform dims already); pocketfft is not called on zero-size arrays."""

    def run(out, x, dims, normalization, flag):
        if 0 not in out._shape:
            kernel(out, x, dims, normalization, flag)

    return run


def build(ffi, lib) -> dict:
    return {name: dict.fromkeys(REAL, fn) for name, fn in kernels(lib).items()}
