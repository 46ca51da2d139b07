"""Glue for the LAPACK kernels of ember.linalg (csrc/lapack.c), and the run-time load of LAPACK.

LAPACK is OpenBLAS's, from the scipy-openblas32 wheel the BLAS already comes from (see
kernels/linalg.py): its Fortran symbols (``scipy_sgetrf_``, ``scipy_dgesdd_``...) are looked up
here per dtype letter and handed to C as addresses. float32 is letter s and float64 d; complex64
(c) and complex128 (z) slot into LETTERS once ember has those dtypes.

Kernel convention (the runners in ember's dispatcher/kinds/lapack.py prepare every buffer): a
batch of matrices is a tensor ``[B, cols, rows]`` whose last two dims are contiguous, i.e. each
matrix column-major as LAPACK wants it. Buffers a kernel writes are packed; read-only operands may
have any batch stride (0 broadcasts one matrix). Outputs come first, so the dispatcher's CPU
fallback copies them back to another device. svd, eigh and lstsq return LAPACK's info per
matrix as host integers (their runners check it at once, as PyTorch does).
"""

from __future__ import annotations

import numpy as np

from ._args import DTYPE_NAMES, addr, raise_status
from .linalg import openblas_library

# csrc/lapack.c numbers the routines in this order.
ROUTINES = (
    "getrf",
    "getrs",
    "potrf",
    "trsm",
    "geqrf",
    "orgqr",
    "gesdd",
    "syevd",
    "gels",
    "gelsy",
    "gelsd",
    "gelss",
    "sytrf",
    "sytrs",
    "geev",
)
LETTERS = {"float32": "s", "float64": "d"}
DTYPE_CODES = {name: DTYPE_NAMES.index(name) for name in LETTERS}
# Complex letters name some routines differently (orgqr -> ungqr, syevd -> heevd).
COMPLEX_NAMES = {"orgqr": "ungqr", "syevd": "heevd"}
LSTSQ_DRIVERS = {"gels": 0, "gelsy": 1, "gelsd": 2, "gelss": 3}


def symbol(letter: str, routine: str) -> str:
    """The wheel's name of ``routine`` for ``letter`` (trsm is the CBLAS one)."""
    if letter in "cz":
        routine = COMPLEX_NAMES.get(routine, routine)
    if routine == "trsm":
        return f"scipy_cblas_{letter}trsm"
    return f"scipy_{letter}{routine}_"


def _load(lib) -> None:
    """Hand every routine found in OpenBLAS to C; a missing one leaves its kernels unsupported."""
    library = openblas_library()
    if library is None:
        return
    for dtype, letter in LETTERS.items():
        for number, routine in enumerate(ROUTINES):
            name = symbol(letter, routine)
            if hasattr(library, name):
                lib.ember_lapack_set(DTYPE_CODES[dtype], number, _address(getattr(library, name)))


def _address(fn) -> int:
    import ctypes

    return ctypes.cast(fn, ctypes.c_void_p).value


def _batch(t) -> int:
    return t._shape[0]


def _bs(t) -> int:
    """The batch stride of a [B, x, y] operand (0 when broadcast or a single matrix)."""
    return t._stride[0] if t._shape[0] > 1 else 0


def _scratch_info(batch: int) -> np.ndarray:
    return np.zeros(max(batch, 1), np.int32)


def build(ffi, lib) -> dict:
    _load(lib)
    no_memory = lib.EMBER_LAPACK_NO_MEMORY

    def check(name, status, t, scratch=None):
        if status == no_memory:
            raise MemoryError(f"{name}: no memory for LAPACK's workspace")
        if status:
            raise_status(status, name, t._dtype.code)
        if scratch is not None and (scratch < 0).any():
            raise RuntimeError(
                f"{name}: LAPACK rejected argument {-scratch.min()} (a bug in ember)"
            )

    def lu_factor(lu, pivots, info):
        batch, n, m = lu._shape
        status = lib.ember_lapack_getrf(
            lu._dtype.code, batch, m, n, addr(lu), addr(pivots), addr(info)
        )
        check("linalg_lu_factor_ex", status, lu)

    def lu_solve(x, lu, pivots, trans):
        batch, nrhs, n = x._shape
        info = _scratch_info(batch)
        status = lib.ember_lapack_getrs(
            x._dtype.code,
            batch,
            n,
            nrhs,
            trans,
            addr(lu),
            _bs(lu),
            addr(pivots),
            _bs(pivots),
            addr(x),
            info.ctypes.data,
        )
        check("linalg_lu_solve", status, x, info)

    def cholesky(factor, info, upper):
        batch, n, _ = factor._shape
        status = lib.ember_lapack_potrf(
            factor._dtype.code, batch, n, int(upper), addr(factor), addr(info)
        )
        check("linalg_cholesky_ex", status, factor)

    def solve_triangular(x, a, upper, left, unitriangular):
        batch, ncols, nrows = x._shape
        # A row-major A is its transpose column-major: solve with op(A^T), the other triangle.
        row_major = a._shape[-1] > 1 and a._stride[-1] != 1
        status = lib.ember_lapack_trsm(
            x._dtype.code,
            batch,
            nrows,
            ncols,
            int(left),
            int(upper != row_major),
            int(row_major),
            int(unitriangular),
            addr(a),
            _bs(a),
            addr(x),
        )
        check("linalg_solve_triangular", status, x)

    def geqrf(a, tau):
        batch, n, m = a._shape
        info = _scratch_info(batch)
        status = lib.ember_lapack_geqrf(
            a._dtype.code, batch, m, n, addr(a), addr(tau), info.ctypes.data
        )
        check("geqrf", status, a, info)

    def householder_product(q, tau):
        batch, n, m = q._shape
        info = _scratch_info(batch)
        status = lib.ember_lapack_orgqr(
            q._dtype.code,
            batch,
            m,
            n,
            tau._shape[-1],
            addr(q),
            addr(tau),
            _bs(tau),
            info.ctypes.data,
        )
        check("linalg_householder_product", status, q, info)

    def svd(u, s, vh, a, job):
        batch, n, m = a._shape
        info = _scratch_info(batch)
        status = lib.ember_lapack_gesdd(
            a._dtype.code,
            batch,
            m,
            n,
            ord(job),
            addr(a),
            addr(s),
            addr(u),
            addr(vh),
            info.ctypes.data,
        )
        check("_linalg_svd", status, a)
        return info

    def eigh(w, v, upper, vectors):
        batch, n, _ = v._shape
        info = _scratch_info(batch)
        status = lib.ember_lapack_syevd(
            v._dtype.code, batch, n, int(upper), int(vectors), addr(v), addr(w), info.ctypes.data
        )
        check("_linalg_eigh", status, v)
        return info

    def lstsq(x, rank, sv, a, driver, rcond):
        batch, n, m = a._shape
        nrhs = x._shape[1]
        rank_ptr = addr(rank) if rank.numel() else 0
        sv_ptr = addr(sv) if sv.numel() else 0
        info = _scratch_info(batch)
        status = lib.ember_lapack_gels(
            a._dtype.code,
            LSTSQ_DRIVERS[driver],
            batch,
            m,
            n,
            nrhs,
            rcond,
            addr(a),
            addr(x),
            rank_ptr,
            sv_ptr,
            info.ctypes.data,
        )
        check("linalg_lstsq", status, a)
        return info

    def ldl_factor(ld, pivots, info, hermitian):
        batch, n, _ = ld._shape
        status = lib.ember_lapack_sytrf(
            ld._dtype.code, batch, n, 0, addr(ld), addr(pivots), addr(info)
        )
        check("linalg_ldl_factor_ex", status, ld)

    def ldl_solve(x, ld, pivots, hermitian):
        batch, nrhs, n = x._shape
        info = _scratch_info(batch)
        status = lib.ember_lapack_sytrs(
            x._dtype.code,
            batch,
            n,
            nrhs,
            0,
            addr(ld),
            _bs(ld),
            addr(pivots),
            _bs(pivots),
            addr(x),
            info.ctypes.data,
        )
        check("linalg_ldl_solve", status, x, info)

    kernels = {
        "linalg_lu_factor_ex": lu_factor,
        "linalg_lu_solve": lu_solve,
        "linalg_cholesky_ex": cholesky,
        "linalg_solve_triangular": solve_triangular,
        "geqrf": geqrf,
        "linalg_householder_product": householder_product,
        "_linalg_svd": svd,
        "_linalg_eigh": eigh,
        "linalg_lstsq": lstsq,
        "linalg_ldl_factor_ex": ldl_factor,
        "linalg_ldl_solve": ldl_solve,
    }
    return {name: dict.fromkeys(LETTERS, fn) for name, fn in kernels.items()}
