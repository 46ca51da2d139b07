"""cuFFT as the CPU emulator serves it (``EMBER_CUDA_EMULATOR=1``): the same ``execute`` as
ember_backend_cuda.cufft.Cufft, over the emulator's device memory (host memory), computed by
numpy's pocketfft. It reads and writes memory through cuFFT's advanced layout (inembed, stride,
dist, batch) exactly as cuFFT does, so the GPU glue (kernels/fft.py) runs its real layouts,
batch loops, in-place passes and scaling without a GPU.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

REAL = {"float32": np.float32, "float64": np.float64}
COMPLEX = {"float32": np.complex64, "float64": np.complex128}


def _layout(address: int, np_type, batch: int, shape, embed, stride: int, dist: int):
    """A writable view of ``batch`` arrays of ``shape`` in cuFFT's advanced layout."""
    item = np.dtype(np_type).itemsize
    steps = [dist] + [stride * math.prod(embed[j + 1 :]) for j in range(len(embed))]
    dims = [batch, *shape]
    extent = sum((d - 1) * s for d, s in zip(dims, steps)) + 1
    buf = (ctypes.c_char * (extent * item)).from_address(address)
    flat = np.frombuffer(buf, np_type, extent)
    return np.lib.stride_tricks.as_strided(flat, dims, [s * item for s in steps])


class EmulatedFft:
    """cuFFT's unnormalised transforms: forward as numpy's ``backward`` norm, inverse as its
    ``forward`` norm (no 1/n)."""

    def execute(self, index, kind, dtype, n, inembed, istride, idist, onembed, ostride, odist,
                batch, src, dst, direction) -> None:  # fmt: skip
        align = 2 * np.dtype(REAL[dtype]).itemsize
        if src % align or dst % align:
            # what cuFFT returns for a data pointer not aligned to its complex type (an H200,
            # 2026-11-27: a float64 r2c from 8 bytes into a buffer); the GPU glue must copy
            raise RuntimeError(
                f"cuFFT {kind} of {dtype} size {list(n)} failed: CUFFT_INVALID_VALUE (data at "
                f"{src:#x} -> {dst:#x}, not {align}-byte aligned)"
            )
        half = [*n[:-1], n[-1] // 2 + 1]
        in_shape, out_shape = {"r2c": (n, half), "c2r": (half, n), "c2c": (n, n)}[kind]
        in_type = REAL[dtype] if kind == "r2c" else COMPLEX[dtype]
        out_type = REAL[dtype] if kind == "c2r" else COMPLEX[dtype]
        a = _layout(src, in_type, batch, in_shape, inembed, istride, idist)
        axes = tuple(range(1, len(n) + 1))
        if kind == "r2c":
            z = np.fft.rfftn(a, axes=axes)
        elif kind == "c2r":
            z = np.fft.irfftn(a, s=n, axes=axes, norm="forward")
        elif direction < 0:
            z = np.fft.fftn(a, axes=axes)
        else:
            z = np.fft.ifftn(a, axes=axes, norm="forward")
        _layout(dst, out_type, batch, out_shape, onembed, ostride, odist)[...] = z
