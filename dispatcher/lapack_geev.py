"""The CPU kernel of ``_linalg_eig``: LAPACK's geev (``LAPACKE_{s,d,c,z}geev``) of the CPU
plugin's scipy-openblas32 through cffi, as ``complex_gemm`` calls its cgemm/zgemm.

An eigendecomposition is LAPACK's to do (Hessenberg reduction, shifted QR, back substitution):
never hand-rolled. For real matrices geev returns the eigenvalues as (wr, wi) and a complex pair's
eigenvectors as two real columns ``(re, im)``; they are assembled into complex tensors as PyTorch's
``linalg_eig_make_complex_eigenvectors`` does. Eigenvectors have norm 1, their largest component
real (geev's normalisation, which PyTorch keeps).
"""

from __future__ import annotations

import ctypes

import cffi
import numpy as np

from ember._tensor import host_array

_FFI = cffi.FFI()
_FFI.cdef(
    "typedef int (*real_geev_t)(int layout, char jobvl, char jobvr, int n, void *a, int lda,"
    " void *wr, void *wi, void *vl, int ldvl, void *vr, int ldvr);"
    "typedef int (*complex_geev_t)(int layout, char jobvl, char jobvr, int n, void *a, int lda,"
    " void *w, void *vl, int ldvl, void *vr, int ldvr);"
)
_COL_MAJOR = 102
_PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
_GEEV: dict = {}


def _geev(dtype: np.dtype):
    """The geev entry point for a numpy dtype, loaded once."""
    found = _GEEV.get(dtype)
    if found is None:
        from ember_backend_cpu.kernels.linalg import openblas_library

        library = openblas_library()
        name = f"scipy_LAPACKE_{_PREFIX[dtype.type]}geev"
        if library is None or not hasattr(library, name):
            raise RuntimeError(f"linalg.eig needs LAPACK's {name} (scipy-openblas32)")
        address = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
        kind = "complex_geev_t" if dtype.kind == "c" else "real_geev_t"
        found = _GEEV[dtype] = _FFI.cast(kind, address)
    return found


def _at(x: np.ndarray):
    return _FFI.cast("void *", x.ctypes.data)


def _pairs(wr, wi, vr):
    """geev's real output as complex eigenvalues and eigenvectors (conjugate pairs' columns
    are ``re + i im`` and ``re - i im``)."""
    w = wr + 1j * wi
    v = vr.astype(w.dtype)
    j = 0
    while j < len(wi):
        if wi[j] != 0 and j + 1 < len(wi):
            v[:, j] = vr[:, j] + 1j * vr[:, j + 1]
            v[:, j + 1] = vr[:, j] - 1j * vr[:, j + 1]
            j += 2
        else:
            j += 1
    return w, v


def _one(a: np.ndarray, compute_v: bool):
    """(w, v or None, info) of one square matrix (a is overwritten)."""
    n = a.shape[0]
    geev = _geev(a.dtype)
    jobvr = b"V" if compute_v else b"N"
    vr = np.empty((n, n), a.dtype, order="F")
    lda = max(1, n)
    if a.dtype.kind == "c":
        w = np.empty(n, a.dtype)
        info = geev(_COL_MAJOR, b"N", jobvr, n, _at(a), lda, _at(w), _FFI.NULL, 1, _at(vr), lda)
        return w, vr, info
    wr, wi = np.empty(n, a.dtype), np.empty(n, a.dtype)
    info = geev(
        _COL_MAJOR, b"N", jobvr, n, _at(a), lda, _at(wr), _at(wi), _FFI.NULL, 1, _at(vr), lda
    )
    w, v = _pairs(wr, wi, vr if compute_v else np.zeros((n, n), a.dtype))
    return w, v, info


def eig(w, v, a, compute_v: bool) -> list:
    """``kernel(w [B, n], v [B, n, n], a [B, n, n], compute_v) -> info per matrix``: geev of
    each matrix of ``a`` (read, not written); ``v`` is left alone when compute_v is False."""
    values, vectors, source = host_array(w), host_array(v), host_array(a)
    infos = []
    for i in range(source.shape[0]):
        matrix = np.array(source[i], order="F")  # geev overwrites its input
        wi, vi, info = _one(matrix, compute_v)
        values[i] = wi
        if compute_v:
            vectors[i] = vi
        infos.append(int(info))
    return infos
