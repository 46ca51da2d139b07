"""Runners of the LAPACK-backed primitives of ember.linalg.

Each checks its arguments with PyTorch's messages, lays the matrices out for LAPACK (see
kinds/matrices.py), calls ``kernel(outputs..., inputs..., options...)`` and returns the outputs
as ``(*batch, rows, cols)`` views with column-major strides, as PyTorch does. A kernel writes
``info`` per matrix; the runners that PyTorch makes raise on failure read it back and raise
LinAlgError naming the batch element. Everything here runs below autograd.
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, B, LU), as in PyTorch
from __future__ import annotations

from ember import _dtype as dt
from ember import return_types as rt
from ember._tensor import empty

from .matrices import (
    as_batch,
    as_matrices,
    batch_size,
    broadcast_batch,
    check_matrix,
    check_same,
    check_tensor,
    column_major,
    display,
    host_ints,
    raise_info,
    read_only,
    vector_batch,
)


def _kernel(op, t):
    return op.kernel(t._storage.device.type, t._dtype)


def _ints(shape: tuple, device, dtype=dt.int32):
    return empty(tuple(shape), dtype, device)


# ---- LU ---------------------------------------------------------------------------------------
def lu_singular(code: int) -> str:
    return (
        f"U[{code},{code}] is zero and using it on lu_solve would result in a division by zero. "
        "If you still want to perform the factorization, consider calling linalg.lu(A, pivot) "
        "or linalg.lu_factor_ex(A, pivot)"
    )


def lu_factor_ex(op, A, pivot=True, check_errors=False):
    """``kernel(lu, pivots, info)``: getrf in place on the column-major copy of A."""
    name = display(op)
    check_matrix(name, A)
    if not pivot and A._storage.device.type == "cpu":
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    *batch, m, n = A._shape
    batch = tuple(batch)
    k = min(m, n)
    lu = column_major(A)
    dev = A._storage.device
    pivots = _ints((batch_size(batch), k), dev)
    info = _ints((batch_size(batch),), dev)
    _kernel(op, A)(lu, pivots, info)
    info = as_batch(info, batch, ())
    if check_errors:
        raise_info(info, name, lu_singular, bool(batch), RuntimeError)
    return rt.linalg_lu_factor_ex(as_matrices(lu, batch, m, n), as_batch(pivots, batch, (k,)), info)


def lu_solve(op, LU, pivots, B, left=True, adjoint=False):
    """``kernel(x, lu, pivots, trans)``: getrs; trans 1 solves with A^T (A^H for complex: 2)."""
    name = display(op)
    check_matrix(name, LU, square=True)
    check_tensor(name, pivots, "pivots")
    check_matrix(name, B, what="B")
    check_same(name, LU, B)
    if pivots._dtype is not dt.int32:
        raise RuntimeError(f"{name}: pivots must be an int32 tensor, got {pivots._dtype.name}")
    if not left:
        # X A = B  <=>  A^T X^T = B^T;  X A^H = B  <=>  A X^H = B^H (conj is a no-op when real)
        if adjoint:  # the kernels read raw storage: conjugates are resolved, not lazy views
            solved = lu_solve(op, LU, pivots, B.mH.resolve_conj(), True, False)
            return solved.mH.resolve_conj()
        return _lu_solve_left(op, name, LU, pivots, B.mT, 1).mT
    return _lu_solve_left(op, name, LU, pivots, B, 2 if adjoint else 0)


def _lu_solve_left(op, name, LU, pivots, B, trans):
    """getrs of op(A) X = B, op = N/T/C for trans 0/1/2."""
    n = LU._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(
            f"{name}: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
            f"{B._shape[-2]}x{B._shape[-1]})"
        )
    if tuple(pivots._shape[-1:]) != (n,):
        raise RuntimeError(f"{name}: pivots must have shape (*, {n}), got {list(pivots._shape)}")
    batch = broadcast_batch(name, LU, pivots, B, tails=(2, 1, 2))
    nrhs = B._shape[-1]
    x = column_major(B, batch)
    _kernel(op, LU)(x, read_only(LU, batch), vector_batch(pivots, batch), trans)
    return as_matrices(x, batch, n, nrhs)


# ---- Cholesky and triangular solves -------------------------------------------------------------
def not_positive_definite(code: int) -> str:
    return (
        "The factorization could not be completed because the input is not positive-definite "
        f"(the leading minor of order {code} is not positive-definite)."
    )


def cholesky_ex(op, A, upper=False, check_errors=False):
    """``kernel(factor, info, upper)``: potrf in place; the other triangle is zeroed."""
    name = display(op)
    check_matrix(name, A, square=True)
    *batch, n, _ = A._shape
    batch = tuple(batch)
    factor = column_major(A)
    info = _ints((batch_size(batch),), A._storage.device)
    _kernel(op, A)(factor, info, bool(upper))
    info = as_batch(info, batch, ())
    if check_errors:
        raise_info(info, name, not_positive_definite, bool(batch))
    return rt.linalg_cholesky_ex(as_matrices(factor, batch, n, n), info)


def solve_triangular(op, A, B, upper, left=True, unitriangular=False):
    """``kernel(x, a, upper, left, unitriangular)``: trsm; ``a`` may be row-major (its last dim
    strided), which the kernel reads as the transpose."""
    name = display(op)
    check_matrix(name, A, square=True)
    check_matrix(name, B, what="B")
    check_same(name, A, B)
    n = A._shape[-1]
    rows, cols = B._shape[-2:]
    if (rows if left else cols) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{name}: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and "
            f"{rows}x{cols})"
        )
    batch = broadcast_batch(name, A, B)
    x = column_major(B, batch)
    a = read_only(A, batch, row_major_ok=True)
    _kernel(op, A)(x, a, bool(upper), bool(left), bool(unitriangular))
    return as_matrices(x, batch, rows, cols)


# ---- QR -----------------------------------------------------------------------------------------
def geqrf(op, A):
    """``kernel(a, tau)``: Householder QR in place (R above the diagonal, reflectors below)."""
    name = display(op)
    check_matrix(name, A)
    *batch, m, n = A._shape
    batch = tuple(batch)
    a = column_major(A)
    tau = empty((batch_size(batch), min(m, n)), A._dtype, A._storage.device)
    _kernel(op, A)(a, tau)
    return rt.geqrf(as_matrices(a, batch, m, n), as_batch(tau, batch, (min(m, n),)))


def householder_product(op, A, tau):
    """``kernel(q, tau)``: orgqr in place on a copy of the reflectors."""
    name = display(op)
    check_tensor(name, A, "input")
    if len(A._shape) < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    check_tensor(name, tau, "tau")
    m, n = A._shape[-2:]
    if m < n:
        raise RuntimeError(
            f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if not tau._shape or tau._shape[-1] > n:
        raise RuntimeError(
            f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    if len(tau._shape) != len(A._shape) - 1 or tau._shape[:-1] != A._shape[:-2]:
        raise RuntimeError(
            f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
            f"{list(tau._shape[:-1])}"
        )
    check_matrix(name, A, what="input")
    check_same(name, A, tau, "tau")
    batch = tuple(A._shape[:-2])
    q = column_major(A)
    _kernel(op, A)(q, vector_batch(tau, batch))
    return as_matrices(q, batch, m, n)


# ---- SVD and symmetric eigendecomposition ---------------------------------------------------
def no_convergence(what: str):
    def message(code: int) -> str:
        return (
            "The algorithm failed to converge because the input matrix is ill-conditioned or "
            f"has too many repeated {what} (error code: {code})."
        )

    return message


def _identity_into(t, count: int) -> None:
    """Write identity matrices into a [B, n, n] buffer (SVD of a matrix with a zero dim)."""
    from ._common import OPS

    eye = OPS["eye"](count, dtype=t._dtype, device=t._storage.device)
    OPS["copy_"].backend((t, eye.expand(t._shape)))


def svd(op, A, full_matrices=True, compute_uv=True, driver=None):
    """``kernel(u, s, vh, a, job) -> info``: gesdd on a copy of A; job 'A', 'S' or 'N'."""
    name = display(op)
    check_matrix(name, A)
    if driver is not None and A._storage.device.type != "cuda":
        raise RuntimeError(
            "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
            "cuSOLVER backend."
        )
    *batch, m, n = A._shape
    batch, k, dev = tuple(batch), min(m, n), A._storage.device
    job = ("A" if full_matrices else "S") if compute_uv else "N"
    ucols, vrows = (m, n) if job == "A" else (k, k)
    if job == "N":
        ucols = vrows = 0
    count = batch_size(batch)
    u = empty((count, ucols, m), A._dtype, dev)
    vh = empty((count, n, vrows), A._dtype, dev)
    s = empty((count, k), A._dtype.to_real(), dev)  # singular values are real
    if k == 0:  # LAPACK returns at once: U or V of a matrix with a zero dim is the identity
        for t, size in ((u, m), (vh, n)):
            if t._shape[-1] == t._shape[-2] and t._storage._nbytes:
                _identity_into(t, size)
    else:
        info = _kernel(op, A)(u, s, vh, column_major(A), job)
        raise_info(info, "linalg.svd", _svd_message(A), bool(batch))
    if job == "N":
        nothing = empty((0,), A._dtype, dev)
        return nothing, as_batch(s, batch, (k,)), nothing
    U = as_matrices(u, batch, m, ucols)
    return U, as_batch(s, batch, (k,)), as_matrices(vh, batch, vrows, n)


def _svd_message(A):
    def message(code: int) -> str:
        from ._common import OPS

        if not bool(OPS["isfinite"](A).all()):
            return (
                "The algorithm failed to converge because the input matrix contained non-finite "
                "values."
            )
        return no_convergence("singular values")(code)

    return message


def eigh(op, A, UPLO="L", compute_v=True):
    """``kernel(w, v, upper, vectors) -> info``: syevd in place on a copy of A."""
    name = display(op)
    check_matrix(name, A, square=True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    *batch, n, _ = A._shape
    batch, dev = tuple(batch), A._storage.device
    v = column_major(A)
    w = empty((batch_size(batch), n), A._dtype.to_real(), dev)  # a Hermitian's are real
    info = _kernel(op, A)(w, v, UPLO == "U", bool(compute_v))
    raise_info(info, name, no_convergence("eigenvalues"), bool(batch))
    vectors = as_matrices(v, batch, n, n) if compute_v else empty((0,), A._dtype, dev)
    return as_batch(w, batch, (n,)), vectors


# ---- least squares, LDL -------------------------------------------------------------------------
LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(op, A, B, rcond=None, driver=None):
    """``kernel(x, rank, sv, a, driver, rcond) -> info``: x is B padded to max(m, n) rows."""
    name = display(op)
    check_tensor(name, A, "input")
    check_tensor(name, B, "b")
    if len(A._shape) < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise RuntimeError(
            f"{name}: This function doesn't handle types other than float and double"
        )
    check_same(name, A, B, "b")
    driver = driver or "gelsy"
    if driver not in LSTSQ_DRIVERS:
        raise RuntimeError(
            f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    vector = len(B._shape) == len(A._shape) - 1
    if vector:
        B = B.unsqueeze(-1)
    m, n = A._shape[-2:]
    if B._shape[-2] != m:
        raise RuntimeError(
            f"{name}: input.size(-2) should match other.size(-2)"
            if not vector
            else f"{name}: input.size(-2) should match other.size(-1)"
        )
    batch = broadcast_batch(name, A, B)
    nrhs, rows, count, dev = B._shape[-1], max(m, n, 1), batch_size(batch), A._storage.device
    if rcond is None:
        single = A._dtype in (dt.float32, dt.complex64)
        rcond = (1.19209290e-07 if single else 2.220446049250313e-16) * max(m, n)
    x = empty((count, nrhs, rows), A._dtype, dev)
    _pad_rows(x, B, batch, m)
    has_rank, has_sv = driver != "gels", driver in ("gelsd", "gelss")
    rank = empty((count,) if has_rank else (0,), dt.int64, dev)
    sv = empty((count, min(m, n)) if has_sv else (0,), A._dtype.to_real(), dev)
    info = _kernel(op, A)(x, rank, sv, column_major(A, batch), driver, float(rcond))
    if driver == "gels":
        raise_info(info, name, _not_full_rank, bool(batch))
    solution = as_matrices(x, batch, rows, nrhs).narrow(-2, 0, n)
    residuals = _residuals(x, batch, m, n, nrhs, driver, rank)
    solution = solution.squeeze(-1) if vector else solution
    rank = as_batch(rank, batch, ()) if has_rank else rank
    sv = as_batch(sv, batch, (min(m, n),)) if has_sv else sv
    return rt.linalg_lstsq(solution, residuals, rank, sv)


def _not_full_rank(code: int) -> str:
    return (
        "The least squares solution could not be computed because the input matrix does not "
        f"have full rank (error code: {code})."
    )


def _pad_rows(x, B, batch, m) -> None:
    """x[:, :, :m] = B column-major (LAPACK reads m rows, writes max(m, n))."""
    from ._common import OPS

    nrhs, rows = x._shape[1:]
    full = as_matrices(x, batch, rows, nrhs)
    if x._storage._nbytes:
        OPS["fill_"].backend((full, 0))
        OPS["copy_"].backend((full.narrow(-2, 0, m), B.expand(*batch, m, nrhs)))


def _residuals(x, batch, m, n, nrhs, driver, rank):
    """Squared residuals from rows n..m of LAPACK's output, when PyTorch computes them: m > n,
    not gelsy, and (for gelsd/gelss) every matrix of full rank."""
    from ._common import OPS

    dtype, dev = x._dtype.to_real(), x._storage.device  # |r|^2: real for complex
    if m <= n or driver == "gelsy":
        return empty((0,), dtype, dev)
    if driver != "gels" and (host_ints(rank) != n).any():
        return empty((0,), dtype, dev)
    tail = as_matrices(x, batch, max(m, n, 1), nrhs).narrow(-2, n, m - n)
    if tail._dtype.is_complex:
        tail = OPS["abs"].backend((tail,))
    return OPS["sum"].backend((tail * tail, [-2]))


def ldl_factor_ex(op, A, hermitian=False, check_errors=False):
    """``kernel(ld, pivots, info, hermitian)``: sytrf ('L') in place; the upper part is zeroed."""
    name = display(op)
    check_matrix(name, A, square=True)
    *batch, n, _ = A._shape
    batch, dev = tuple(batch), A._storage.device
    ld = column_major(A)
    pivots = _ints((batch_size(batch), n), dev)
    info = _ints((batch_size(batch),), dev)
    _kernel(op, A)(ld, pivots, info, bool(hermitian))
    info = as_batch(info, batch, ())
    if check_errors:
        raise_info(info, name, _ldl_singular, bool(batch))
    LD = as_matrices(ld, batch, n, n)
    from ._common import OPS

    OPS["copy_"].backend((LD, OPS["tril"].backend((LD,))))
    return rt.linalg_ldl_factor_ex(LD, as_batch(pivots, batch, (n,)), info)


def _ldl_singular(code: int) -> str:
    return (
        f"The factorization could not be completed because the input is singular (D[{code},"
        f"{code}] is zero)."
    )


def ldl_solve(op, LD, pivots, B, hermitian=False):
    """``kernel(x, ld, pivots, hermitian)``: sytrs."""
    name = display(op)
    check_matrix(name, LD, square=True, what="LD")
    check_tensor(name, pivots, "pivots")
    check_matrix(name, B, what="B")
    check_same(name, LD, B)
    n = LD._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(
            f"{name}: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
            f"{B._shape[-2]}x{B._shape[-1]})"
        )
    batch = broadcast_batch(name, LD, pivots, B, tails=(2, 1, 2))
    x = column_major(B, batch)
    _kernel(op, LD)(x, read_only(LD, batch), vector_batch(pivots, batch), bool(hermitian))
    return as_matrices(x, batch, n, B._shape[-1])
