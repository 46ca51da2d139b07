"""The complex CPU kernels of ember.linalg's LAPACK primitives: LAPACKE's ``c``/``z`` routines
(and CBLAS's trsm) of the CPU plugin's scipy-openblas32 through cffi, as ``lapack_geev`` calls
geev. The real kernels live in the plugin's C (csrc/lapack.c); LAPACKE sizes the workspaces
itself, so the complex ones need no C and only loop over the batch here.

Kernel convention (kinds/lapack.py prepares the buffers): a batch of matrices is a
``[B, cols, rows]`` tensor, each matrix column-major, so the numpy view ``buf[i].T`` is the
matrix itself, Fortran-ordered, and its pointer goes to LAPACK unchanged. Read-only operands
may be broadcast or row-major: they are copied to Fortran order per matrix.
"""

from __future__ import annotations

import ctypes

import cffi
import numpy as np

from ember._tensor import host_array

_FFI = cffi.FFI()
_FFI.cdef(
    "typedef int (*getrf_t)(int layout, int m, int n, void *a, int lda, int *ipiv);"
    "typedef int (*getrs_t)(int layout, char trans, int n, int nrhs, const void *a, int lda,"
    " const int *ipiv, void *b, int ldb);"
    "typedef int (*potrf_t)(int layout, char uplo, int n, void *a, int lda);"
    "typedef int (*geqrf_t)(int layout, int m, int n, void *a, int lda, void *tau);"
    "typedef int (*ungqr_t)(int layout, int m, int n, int k, void *a, int lda, const void *tau);"
    "typedef int (*heevd_t)(int layout, char jobz, char uplo, int n, void *a, int lda, void *w);"
    "typedef int (*gesdd_t)(int layout, char jobz, int m, int n, void *a, int lda, void *s,"
    " void *u, int ldu, void *vt, int ldvt);"
    "typedef int (*gels_t)(int layout, char trans, int m, int n, int nrhs, void *a, int lda,"
    " void *b, int ldb);"
    "typedef int (*gelsy_z_t)(int layout, int m, int n, int nrhs, void *a, int lda, void *b,"
    " int ldb, int *jpvt, double rcond, int *rank);"
    "typedef int (*gelsy_c_t)(int layout, int m, int n, int nrhs, void *a, int lda, void *b,"
    " int ldb, int *jpvt, float rcond, int *rank);"
    "typedef int (*gelsd_z_t)(int layout, int m, int n, int nrhs, void *a, int lda, void *b,"
    " int ldb, void *s, double rcond, int *rank);"
    "typedef int (*gelsd_c_t)(int layout, int m, int n, int nrhs, void *a, int lda, void *b,"
    " int ldb, void *s, float rcond, int *rank);"
    "typedef int (*trf_t)(int layout, char uplo, int n, void *a, int lda, int *ipiv);"
    "typedef int (*trs_t)(int layout, char uplo, int n, int nrhs, const void *a, int lda,"
    " const int *ipiv, void *b, int ldb);"
    "typedef void (*trsm_t)(int order, int side, int uplo, int trans, int diag, int m, int n,"
    " const void *alpha, const void *a, int lda, void *b, int ldb);"
)
_COL_MAJOR = 102
_LEFT, _RIGHT, _UPPER, _LOWER, _NO_TRANS, _NON_UNIT, _UNIT = 141, 142, 121, 122, 111, 131, 132
_LETTER = {np.complex64: "c", np.complex128: "z"}
# routine -> (the wheel's symbol with {} for the letter, the cffi type of its pointer)
_ROUTINES = {
    "getrf": ("scipy_LAPACKE_{}getrf", "getrf_t"),
    "getrs": ("scipy_LAPACKE_{}getrs", "getrs_t"),
    "potrf": ("scipy_LAPACKE_{}potrf", "potrf_t"),
    "trsm": ("scipy_cblas_{}trsm", "trsm_t"),
    "geqrf": ("scipy_LAPACKE_{}geqrf", "geqrf_t"),
    "ungqr": ("scipy_LAPACKE_{}ungqr", "ungqr_t"),
    "heevd": ("scipy_LAPACKE_{}heevd", "heevd_t"),
    "gesdd": ("scipy_LAPACKE_{}gesdd", "gesdd_t"),
    # LDL^T (symmetric) and LDL^H (Hermitian), the lower triangle as PyTorch
    "sytrf": ("scipy_LAPACKE_{}sytrf", "trf_t"),
    "hetrf": ("scipy_LAPACKE_{}hetrf", "trf_t"),
    "sytrs": ("scipy_LAPACKE_{}sytrs", "trs_t"),
    "hetrs": ("scipy_LAPACKE_{}hetrs", "trs_t"),
    # the least-squares drivers; rcond is a float or a double by the precision: {} in the type
    "gels": ("scipy_LAPACKE_{}gels", "gels_t"),
    "gelsy": ("scipy_LAPACKE_{}gelsy", "gelsy_{}_t"),
    "gelsd": ("scipy_LAPACKE_{}gelsd", "gelsd_{}_t"),
    "gelss": ("scipy_LAPACKE_{}gelss", "gelsd_{}_t"),
}
_LOADED: dict = {}


def _routine(name: str, dtype: np.dtype):
    """The entry point of ``name`` for a numpy complex dtype, loaded once."""
    key = (name, dtype.type)
    found = _LOADED.get(key)
    if found is None:
        from ember_backend_cpu.kernels.linalg import openblas_library

        pattern, kind = _ROUTINES[name]
        letter = _LETTER[dtype.type]
        symbol, kind = pattern.format(letter), kind.format(letter)
        library = openblas_library()
        if library is None or not hasattr(library, symbol):
            raise RuntimeError(f"complex linalg needs LAPACK's {symbol} (scipy-openblas32)")
        address = ctypes.cast(getattr(library, symbol), ctypes.c_void_p).value
        found = _LOADED[key] = _FFI.cast(kind, address)
    return found


def _at(x: np.ndarray):
    return _FFI.cast("void *", x.ctypes.data)


def _ints(x: np.ndarray):
    return _FFI.cast("int *", x.ctypes.data)


def _matrices(buf) -> np.ndarray:
    """The matrices of a written ``[B, cols, rows]`` buffer as Fortran-ordered ``[B][rows, cols]``
    views (writes go to the buffer)."""
    return host_array(buf).transpose(0, 2, 1)


def _fortran(matrix: np.ndarray) -> np.ndarray:
    """A read-only operand's matrix in the Fortran order LAPACK reads."""
    return np.asfortranarray(matrix)


def lu_factor(lu, pivots, info) -> None:
    """getrf of each matrix in place; 1-based pivots and info per matrix, as LAPACK gives."""
    mats, piv, codes = _matrices(lu), host_array(pivots), host_array(info)
    for i, a in enumerate(mats):
        m, n = a.shape
        if m == 0 or n == 0:
            codes[i] = 0
            continue
        row = np.empty(min(m, n), np.int32)
        codes[i] = _routine("getrf", a.dtype)(_COL_MAJOR, m, n, _at(a), max(1, m), _ints(row))
        piv[i] = row


def _pivoted_solve(name: str, x, factors, pivots, solve) -> None:
    """For each right-hand side matrix b of x (solved in place) with its factor and LAPACK
    pivots: ``solve(n, nrhs, factor, pivots, b)`` returns the routine's status."""
    mats, factors, piv = _matrices(x), host_array(factors), host_array(pivots)
    for i, b in enumerate(mats):
        n, nrhs = b.shape
        if n == 0 or nrhs == 0:
            continue
        a = _fortran(factors[i].T)
        row = np.ascontiguousarray(piv[i], np.int32)
        _checked(name, solve(n, nrhs, _at(a), _ints(row), b))


def lu_solve(x, lu, pivots, trans: int) -> None:
    """getrs with op(A) = A, A^T or A^H (trans 0/1/2) for each right-hand side matrix."""
    op = b"NTC"[trans : trans + 1]

    def solve(n, nrhs, a, row, b):
        return _routine("getrs", b.dtype)(_COL_MAJOR, op, n, nrhs, a, n, row, _at(b), n)

    _pivoted_solve("linalg_lu_solve", x, lu, pivots, solve)


def cholesky(factor, info, upper: bool) -> None:
    """potrf of each matrix in place, the other triangle zeroed (PyTorch returns it so)."""
    mats, codes = _matrices(factor), host_array(info)
    for i, a in enumerate(mats):
        n = a.shape[0]
        if n == 0:
            codes[i] = 0
            continue
        codes[i] = _routine("potrf", a.dtype)(_COL_MAJOR, b"U" if upper else b"L", n, _at(a), n)
        a[...] = np.triu(a) if upper else np.tril(a)


def solve_triangular(x, a, upper: bool, left: bool, unitriangular: bool) -> None:
    """trsm of each right-hand side matrix with its triangular matrix (broadcast or row-major
    operands are copied to Fortran order first)."""
    mats, triangles = _matrices(x), host_array(a)
    for i, b in enumerate(mats):
        rows, cols = b.shape
        if rows == 0 or cols == 0:
            continue
        t = _fortran(triangles[i].T)
        one = np.ones(1, b.dtype)
        _routine("trsm", b.dtype)(
            _COL_MAJOR,
            _LEFT if left else _RIGHT,
            _UPPER if upper else _LOWER,
            _NO_TRANS,
            _UNIT if unitriangular else _NON_UNIT,
            rows,
            cols,
            _at(one),
            _at(t),
            max(1, t.shape[0]),
            _at(b),
            max(1, rows),
        )


def _checked(name: str, status: int) -> None:
    if status < 0:
        raise RuntimeError(f"{name}: LAPACK rejected argument {-status} (a bug in ember)")


def geqrf(a, tau) -> None:
    """Householder QR of each matrix in place (R above the diagonal, reflectors below)."""
    mats, taus = _matrices(a), host_array(tau)
    for i, m_ in enumerate(mats):
        m, n = m_.shape
        if m == 0 or n == 0:
            continue
        t = np.empty(min(m, n), m_.dtype)
        _checked("geqrf", _routine("geqrf", m_.dtype)(_COL_MAJOR, m, n, _at(m_), m, _at(t)))
        taus[i] = t


def householder_product(q, tau) -> None:
    """ungqr: the first n columns of the product of the reflectors, in place."""
    mats, taus = _matrices(q), host_array(tau)
    for i, m_ in enumerate(mats):
        m, n = m_.shape
        if m == 0 or n == 0:
            continue
        t = np.ascontiguousarray(taus[i])
        status = _routine("ungqr", m_.dtype)(_COL_MAJOR, m, n, len(t), _at(m_), m, _at(t))
        _checked("linalg_householder_product", status)


def eigh(w, v, upper: bool, vectors: bool) -> list:
    """heevd of each Hermitian matrix in place (eigenvectors in v when asked); real eigenvalues
    ascending in w; LAPACK's info per matrix."""
    mats, values = _matrices(v), host_array(w)
    infos = []
    for i, a in enumerate(mats):
        n = a.shape[0]
        lam = np.empty(n, values.dtype)
        jobz, uplo = b"V" if vectors else b"N", b"U" if upper else b"L"
        info = _routine("heevd", a.dtype)(_COL_MAJOR, jobz, uplo, n, _at(a), max(1, n), _at(lam))
        _checked("_linalg_eigh", info)
        values[i] = lam
        infos.append(int(info))
    return infos


def svd(u, s, vh, a, job: str) -> list:
    """gesdd of each matrix of ``a`` (overwritten): U [m, ucols], real S, Vh [vrows, n]; job 'A',
    'S' or 'N'; LAPACK's info per matrix."""
    sources, left, right, values = _matrices(a), _matrices(u), _matrices(vh), host_array(s)
    infos = []
    for i, m_ in enumerate(sources):
        m, n = m_.shape
        sv = np.empty(min(m, n), values.dtype)
        if job == "N":
            info = _routine("gesdd", m_.dtype)(
                _COL_MAJOR, b"N", m, n, _at(m_), m, _at(sv), _FFI.NULL, 1, _FFI.NULL, 1
            )
        else:
            ui, vi = left[i], right[i]
            info = _routine("gesdd", m_.dtype)(
                _COL_MAJOR,
                job.encode(),
                m,
                n,
                _at(m_),
                m,
                _at(sv),
                _at(ui),
                m,
                _at(vi),
                max(1, vi.shape[0]),
            )
        _checked("_linalg_svd", info)
        values[i] = sv
        infos.append(int(info))
    return infos


def lstsq(x, rank, sv, a, driver: str, rcond: float) -> list:
    """The least-squares driver on each matrix of ``a`` (overwritten) and its right-hand sides
    ``x`` (B padded to max(m, n) rows, the solution on top); rank and the real singular values
    when the driver gives them; LAPACK's info per matrix."""
    sources, rhs = _matrices(a), _matrices(x)
    ranks = host_array(rank) if rank.numel() else None
    values = host_array(sv) if sv.numel() else None
    infos = []
    for i, m_ in enumerate(sources):
        m, n = m_.shape
        b = rhs[i]
        ldb, nrhs = max(1, b.shape[0]), b.shape[1]
        fn = _routine(driver, m_.dtype)
        r = np.zeros(1, np.int32)
        if driver == "gels":
            info = fn(_COL_MAJOR, b"N", m, n, nrhs, _at(m_), max(1, m), _at(b), ldb)
        elif driver == "gelsy":
            jpvt = np.zeros(max(1, n), np.int32)
            info = fn(
                _COL_MAJOR,
                m,
                n,
                nrhs,
                _at(m_),
                max(1, m),
                _at(b),
                ldb,
                _ints(jpvt),
                rcond,
                _ints(r),
            )
        else:
            s_ = np.empty(max(1, min(m, n)), m_.real.dtype)
            info = fn(
                _COL_MAJOR, m, n, nrhs, _at(m_), max(1, m), _at(b), ldb, _at(s_), rcond, _ints(r)
            )
            if values is not None:
                values[i] = s_[: min(m, n)]
        _checked("linalg_lstsq", info)
        if ranks is not None:
            ranks[i] = r[0]
        infos.append(int(info))
    return infos


def ldl_factor(ld, pivots, info, hermitian: bool) -> None:
    """hetrf (hermitian) or sytrf of each matrix's lower triangle in place; LAPACK's pivots."""
    mats, piv, codes = _matrices(ld), host_array(pivots), host_array(info)
    for i, a in enumerate(mats):
        n = a.shape[0]
        row = np.zeros(n, np.int32)
        fn = _routine("hetrf" if hermitian else "sytrf", a.dtype)
        codes[i] = fn(_COL_MAJOR, b"L", n, _at(a), max(1, n), _ints(row)) if n else 0
        _checked("linalg_ldl_factor_ex", codes[i])
        piv[i] = row


def ldl_solve(x, ld, pivots, hermitian: bool) -> None:
    """hetrs or sytrs with each factor from ldl_factor."""
    name = "hetrs" if hermitian else "sytrs"

    def solve(n, nrhs, a, row, b):
        return _routine(name, b.dtype)(_COL_MAJOR, b"L", n, nrhs, a, n, row, _at(b), n)

    _pivoted_solve("linalg_ldl_solve", x, ld, pivots, solve)


KERNELS = {
    "linalg_lu_factor_ex": lu_factor,
    "linalg_lu_solve": lu_solve,
    "linalg_cholesky_ex": cholesky,
    "linalg_solve_triangular": solve_triangular,
    "geqrf": geqrf,
    "linalg_householder_product": householder_product,
    "_linalg_eigh": eigh,
    "_linalg_svd": svd,
    "linalg_lstsq": lstsq,
    "linalg_ldl_factor_ex": ldl_factor,
    "linalg_ldl_solve": ldl_solve,
}
