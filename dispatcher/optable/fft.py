"""The FFT primitives, ATen's ``_fft_r2c``, ``_fft_c2r`` and ``_fft_c2c``: one row each.

Complex tensors are their real view (a trailing dim of 2) until ember has complex dtypes; the
public ``ember.fft`` functions will wrap these rows then. References: numpy's pocketfft in
float64 (``numpy.fft``), which the CPU kernels also call in the input's precision.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt

from ..kinds import fft as run
from ..opdef import DTYPES_FLOAT, Kind, OpDef, Promotion

FFT_DTYPES = DTYPES_FLOAT - {d for d in DTYPES_FLOAT if d.itemsize == 2}
FFT_ARGS = "(out, input, dims, normalization, flag): see dispatcher/kinds/fft.py"
# numpy's norm= for ATen's normalization (0 none, 1 1/sqrt(n), 2 1/n), forward and inverse
NORM_FORWARD = ("backward", "ortho", "forward")
NORM_INVERSE = ("forward", "ortho", "backward")


def as_complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0] + 1j * x[..., 1]


def as_real(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


def r2c_ref(x, dim, normalization, onesided):
    axes = sorted(d % x.ndim for d in dim)
    if onesided:
        return as_real(np.fft.rfftn(x, axes=axes, norm=NORM_FORWARD[normalization]))
    return as_real(np.fft.fftn(x, axes=axes, norm=NORM_FORWARD[normalization]))


def c2r_ref(x, dim, normalization, last_dim_size):
    axes = sorted(d % (x.ndim - 1) for d in dim)
    sizes = [x.shape[d] for d in axes[:-1]] + [last_dim_size]
    return np.fft.irfftn(as_complex(x), s=sizes, axes=axes, norm=NORM_INVERSE[normalization])


def c2c_ref(x, dim, normalization, forward):
    axes = sorted(d % (x.ndim - 1) for d in dim)
    if forward:
        return as_real(np.fft.fftn(as_complex(x), axes=axes, norm=NORM_FORWARD[normalization]))
    return as_real(np.fft.ifftn(as_complex(x), axes=axes, norm=NORM_INVERSE[normalization]))


def _row(schema, ref, runner):
    return OpDef(
        schema,
        Kind.FFT,
        ref,
        promotion=Promotion.KEEP,
        dtypes=FFT_DTYPES,
        runner=runner,
        samples="fft",
        kernel_args=FFT_ARGS,
        function=False,
        method=False,
        out=None,
        # float32 error grows with log n and the signal's norm
        tolerances={dt.float32: (1e-4, 1e-4)},
    )


ROWS = [
    _row(
        "_fft_r2c(Tensor input, int[] dim, int normalization, bool onesided) -> Tensor",
        r2c_ref,
        run.r2c,
    ),
    _row(
        "_fft_c2r(Tensor input, int[] dim, int normalization, int last_dim_size) -> Tensor",
        c2r_ref,
        run.c2r,
    ),
    _row(
        "_fft_c2c(Tensor input, int[] dim, int normalization, bool forward) -> Tensor",
        c2c_ref,
        run.c2c,
    ),
]
