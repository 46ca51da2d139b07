"""cuSOLVER's routines as the CPU emulator serves them (``EMBER_CUDA_EMULATOR=1``): the same
methods as ember_backend_cuda.cusolver.Cusolver, over the emulator's device memory (host memory),
computed by scipy's LAPACK. So the GPU glue (kernels/lapack.py) runs its real layouts, batch
strides, transposes and info handling without a GPU. scipy is a test dependency, imported only
when the emulator is asked for a solver.
"""

# ruff: noqa: N806 - matrices keep their mathematical names (A, B, U, S, Vh)
from __future__ import annotations

import ctypes

import numpy as np

NUMPY = {"float32": np.float32, "float64": np.float64}
PREFIX = {"float32": "s", "float64": "d"}


def _view(address: int, dtype: str, count: int) -> np.ndarray:
    np_type = NUMPY.get(dtype, dtype)
    size = np.dtype(np_type).itemsize
    buf = (ctypes.c_char * max(count * size, 1)).from_address(address)
    return np.frombuffer(buf, np_type, count)


def _matrix(address: int, dtype: str, rows: int, cols: int) -> np.ndarray:
    """A writable view of one packed column-major rows x cols matrix, as rows x cols."""
    return _view(address, dtype, rows * cols).reshape(cols, rows).T


def _lapack(dtype: str, name: str):
    from scipy.linalg import lapack

    return getattr(lapack, PREFIX[dtype] + name)


class EmulatedSolver:
    """Every method takes (device index, dtype name, batch, sizes..., addresses) as Cusolver's."""

    def getrf(self, index, dtype, batch, m, n, a, ipiv, info):
        item, k = np.dtype(NUMPY[dtype]).itemsize, min(m, n)
        if not k:  # LAPACK's quick return: nothing to factor
            _view(info, np.int32, batch)[:] = 0
            return
        for i in range(batch):
            A = _matrix(a + i * m * n * item, dtype, m, n)
            lu, piv, code = _lapack(dtype, "getrf")(A)
            A[...] = lu
            _view(ipiv + 4 * i * k, np.int32, k)[:] = piv + 1
            _view(info + 4 * i, np.int32, 1)[0] = code

    def getrs(self, index, dtype, batch, n, nrhs, trans, lu, lu_bs, ipiv, ipiv_bs, b, info):
        item = np.dtype(NUMPY[dtype]).itemsize
        for i in range(batch):
            factor = _matrix(lu + i * lu_bs * item, dtype, n, n)
            piv = _view(ipiv + 4 * i * ipiv_bs, np.int32, n) - 1
            B = _matrix(b + i * n * nrhs * item, dtype, n, nrhs)
            x, code = _lapack(dtype, "getrs")(factor, piv, B, trans=min(trans, 1))
            B[...] = x
            _view(info + 4 * i, np.int32, 1)[0] = code

    def potrf(self, index, dtype, batch, n, upper, a, info):
        item = np.dtype(NUMPY[dtype]).itemsize
        _view(info, np.int32, batch)[:] = 0
        for i in range(batch if n else 0):
            A = _matrix(a + i * n * n * item, dtype, n, n)
            factor, code = _lapack(dtype, "potrf")(A, lower=not upper, clean=0)
            A[...] = factor  # as cuSOLVER: the other triangle is left as it was
            _view(info + 4 * i, np.int32, 1)[0] = code

    def trsm(self, index, dtype, batch, m, n, left, upper, trans, unit, a, a_bs, b):
        from scipy.linalg import blas

        item, size = np.dtype(NUMPY[dtype]).itemsize, m if left else n
        trsm = getattr(blas, PREFIX[dtype] + "trsm")
        for i in range(batch):
            A = _matrix(a + i * a_bs * item, dtype, size, size)
            B = _matrix(b + i * m * n * item, dtype, m, n)
            B[...] = trsm(1.0, A, B, side=0 if left else 1, lower=not upper,
                          trans_a=int(trans), diag=int(unit))  # fmt: skip

    def geqrf(self, index, dtype, batch, m, n, a, tau, info):
        item, k = np.dtype(NUMPY[dtype]).itemsize, min(m, n)
        _view(info, np.int32, batch)[:] = 0
        for i in range(batch if k else 0):
            A = _matrix(a + i * m * n * item, dtype, m, n)
            qr, t, _, code = _lapack(dtype, "geqrf")(A)
            A[...] = qr
            _view(tau + i * k * item, dtype, k)[:] = t
            _view(info + 4 * i, np.int32, 1)[0] = code

    def orgqr(self, index, dtype, batch, m, n, k, a, tau, tau_bs, info):
        item = np.dtype(NUMPY[dtype]).itemsize
        for i in range(batch):
            A = _matrix(a + i * m * n * item, dtype, m, n)
            t = _view(tau + i * tau_bs * item, dtype, k).copy()
            if k == 0:
                A[...] = np.eye(m, n)
                continue
            q, _, code = _lapack(dtype, "orgqr")(A, t)
            A[...] = q
            _view(info + 4 * i, np.int32, 1)[0] = code

    def syevd(self, index, dtype, batch, n, upper, vectors, a, w, info):
        item = np.dtype(NUMPY[dtype]).itemsize
        _view(info, np.int32, batch)[:] = 0
        for i in range(batch if n else 0):
            A = _matrix(a + i * n * n * item, dtype, n, n)
            values, v, code = _lapack(dtype, "syevd")(A, compute_v=int(vectors), lower=not upper)
            _view(w + i * n * item, dtype, n)[:] = values
            if vectors:
                A[...] = v
            _view(info + 4 * i, np.int32, 1)[0] = code

    def gesvdj(self, index, dtype, batch, m, n, econ, vectors, a, s, u, v, info):
        item, k = np.dtype(NUMPY[dtype]).itemsize, min(m, n)
        ucols, vcols = (k, k) if econ else (m, n)
        for i in range(batch):
            A = _matrix(a + i * m * n * item, dtype, m, n).astype(np.float64)
            if not vectors:
                _view(s + i * k * item, dtype, k)[:] = np.linalg.svd(A, compute_uv=False)
            else:
                U, S, Vh = np.linalg.svd(A, full_matrices=not econ)
                _view(s + i * k * item, dtype, k)[:] = S
                _matrix(u + i * m * ucols * item, dtype, m, ucols)[...] = U
                _matrix(v + i * n * vcols * item, dtype, n, vcols)[...] = Vh.T
            _view(info + 4 * i, np.int32, 1)[0] = 0
