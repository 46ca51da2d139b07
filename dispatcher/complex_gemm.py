"""Complex matrix products on the CPU: ``cblas_cgemm``/``cblas_zgemm`` of OpenBLAS via cffi.

The library is the CPU plugin's scipy-openblas32 (32-bit BLAS integers), loaded once by the
plugin; the entry points are cast to cffi function pointers here. A transposed operand (the
common ``a @ b.mT``) is passed with CblasTrans instead of being copied; other layouts are copied
to row-major first.

The kernels read the operands' lazy bits (dispatcher/mathbits.py passes flagged operands here,
``READS_BITS``): a conjugate view is OpenBLAS's CblasConjTrans when transposed (``a.mH``) and its
CblasConjNoTrans extension when row-major, and negative bits fold into alpha, so no operand is
materialized for its bits.
"""

from __future__ import annotations

import cffi
import numpy as np

from ember._tensor import host_array

_FFI = cffi.FFI()
_FFI.cdef(
    "typedef void (*gemm_t)(int order, int ta, int tb, int m, int n, int k, const void *alpha,"
    " const void *a, int lda, const void *b, int ldb, const void *beta, void *c, int ldc);"
)
_ROW_MAJOR = 101
# CBLAS_TRANSPOSE, by (transposed, conjugated); 114 (ConjNoTrans) is OpenBLAS's extension.
_TRANSPOSE = {(False, False): 111, (True, False): 112, (True, True): 113, (False, True): 114}
_GEMM: dict = {}


def _gemm(dtype):
    """The gemm for a numpy complex dtype, loaded once; RuntimeError when OpenBLAS is missing."""
    found = _GEMM.get(dtype)
    if found is None:
        from ember_backend_cpu.kernels.linalg import openblas_library

        library = openblas_library()
        name = "scipy_cblas_cgemm" if dtype == np.complex64 else "scipy_cblas_zgemm"
        if library is None or not hasattr(library, name):
            raise RuntimeError(f"complex matmul needs OpenBLAS's {name} (scipy-openblas32)")
        import ctypes

        address = ctypes.cast(getattr(library, name), ctypes.c_void_p).value
        found = _GEMM[dtype] = _FFI.cast("gemm_t", address)
    return found


def _operand(m: np.ndarray, conj: bool):
    """``(array, CBLAS transpose flag, leading dimension)`` for a row-major or transposed
    matrix whose values are ``conj(m)`` when ``conj``; other layouts are copied to row-major."""
    rows, cols = m.shape
    item = m.itemsize
    s0, s1 = m.strides[0] // item, m.strides[1] // item
    if (s1 == 1 or cols <= 1) and s0 >= max(1, cols) and m.strides[0] % item == 0:
        return m, _TRANSPOSE[False, conj], max(1, s0)
    if (s0 == 1 or rows <= 1) and s1 >= max(1, rows) and m.strides[1] % item == 0:
        return m, _TRANSPOSE[True, conj], max(1, s1)
    return np.ascontiguousarray(m), _TRANSPOSE[False, conj], max(1, cols)


def _product(out: np.ndarray, a: np.ndarray, b: np.ndarray, bits: tuple) -> None:
    """``out = a @ b`` with ``bits`` = (conj a, conj b, negated): the operands' lazy bits."""
    n, k = a.shape
    p = b.shape[1]
    if n == 0 or p == 0:
        return
    if k == 0:
        out[...] = 0
        return
    conj_a, conj_b, negated = bits
    a, ta, lda = _operand(a, conj_a)
    b, tb, ldb = _operand(b, conj_b)
    alpha = np.full(1, -1 if negated else 1, out.dtype)
    zero = np.zeros(1, out.dtype)

    def at(x):
        return _FFI.cast("void *", x.ctypes.data)

    _gemm(out.dtype)(
        _ROW_MAJOR, ta, tb, n, p, k, at(alpha), at(a), lda, at(b), ldb, at(zero), at(out), p
    )


def _bits(a, b) -> tuple:
    return a._conj_bit, b._conj_bit, a._neg_bit != b._neg_bit


def mm(out, a, b) -> None:
    """``out = a @ b`` for contiguous ``out`` [n, p]; ``a``, ``b`` of any strides."""
    _product(host_array(out), host_array(a), host_array(b), _bits(a, b))


def bmm(out, a, b) -> None:
    """``out[i] = a[i] @ b[i]``, one gemm per matrix."""
    target, left, right = host_array(out), host_array(a), host_array(b)
    bits = _bits(a, b)
    for i in range(target.shape[0]):
        _product(target[i], left[i], right[i], bits)


# The kernels that take flagged operands (mathbits.READS_BITS reads this mark).
mm.reads_bits = True
bmm.reads_bits = True
