"""numpy oracles of the linalg rows (scipy's where numpy has no such routine), with the rows'
names and arguments: the generated op tests compare ember with these. scipy is a test-only
dependency, imported when a reference runs, never by ember itself."""

from __future__ import annotations

import numpy as np


def each(fn, arrays, cores):
    """``fn`` over the matrices of ``arrays`` (their last ``cores[i]`` dims), the leading dims
    broadcast; every output stacked back over them (a tuple when ``fn`` returns one)."""
    arrays = [np.asarray(a) for a in arrays]
    batch = np.broadcast_shapes(*(a.shape[: a.ndim - c] for a, c in zip(arrays, cores)))
    arrays = [np.broadcast_to(a, batch + a.shape[a.ndim - c :]) for a, c in zip(arrays, cores)]
    if not batch:
        return fn(*arrays)
    sample = fn(*(np.ones(a.shape[len(batch) :], a.dtype) for a in arrays))
    single = not isinstance(sample, tuple)
    sample = (sample,) if single else sample
    outs = [np.zeros(batch + np.shape(s), np.asarray(s).dtype) for s in sample]
    for index in np.ndindex(*batch):
        got = fn(*(a[index] for a in arrays))
        for out, value in zip(outs, (got,) if single else got):
            out[index] = value
    return outs[0] if single else tuple(outs)


def _first_zero_diagonal(m) -> np.int32:
    zeros = np.flatnonzero(np.diagonal(m) == 0)
    return np.int32(zeros[0] + 1 if zeros.size else 0)


def lu_factor_ex(a, pivot=True, check_errors=False):
    from scipy.linalg import lu_factor

    def one(m):
        if m.size == 0:
            return m.copy(), np.zeros(min(m.shape), np.int32), np.int32(0)
        lu, piv = lu_factor(m, check_finite=False)
        return lu, (piv + 1).astype(np.int32), _first_zero_diagonal(lu)

    return each(one, [a], [2])


def lu_solve(lu, pivots, b, left=True, adjoint=False):
    from scipy.linalg import lu_solve as solve

    def one(f, p, rhs):
        if rhs.size == 0:
            return rhs.copy()
        if left:
            return solve((f, p - 1), rhs, trans=1 if adjoint else 0, check_finite=False)
        return solve((f, p - 1), rhs.T, trans=0 if adjoint else 1, check_finite=False).T

    return each(one, [lu, pivots, b], [2, 1, 2])


def cholesky_ex(a, upper=False, check_errors=False):
    factor = np.linalg.cholesky(a)
    return (np.swapaxes(factor, -1, -2) if upper else factor), np.zeros(a.shape[:-2], np.int32)


def _triangle(a, upper, unitriangular):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - np.diagonal(t, 0, -2, -1)[..., None] * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    return t


def solve_triangular(a, b, upper, left=True, unitriangular=False):
    t = _triangle(a, upper, unitriangular)
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def geqrf(a):
    def one(m):
        if m.size == 0:
            return m.copy(), np.zeros(min(m.shape), m.dtype)
        h, tau = np.linalg.qr(m, mode="raw")
        return h.T, tau

    return each(one, [a], [2])


def householder_product(a, tau):
    """Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i = (0, ..., 1, a[i+1:, i]): its n columns."""

    def one(m, t):
        rows, cols = m.shape
        q = np.eye(rows, dtype=m.dtype)
        for i in range(t.shape[0]):
            v = np.concatenate([np.zeros(i), [1.0], m[i + 1 :, i]])
            q = q @ (np.eye(rows) - t[i] * np.outer(v, v))
        return q[:, :cols]

    return each(one, [a, tau], [2, 1])


def svd(a, full_matrices=False, compute_uv=True, driver=None):
    if not compute_uv:
        return np.zeros(0, a.dtype), np.linalg.svd(a, compute_uv=False), np.zeros(0, a.dtype)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def eigh(a, UPLO="L", compute_v=True):  # noqa: N803 - PyTorch's argument name
    w, v = np.linalg.eigh(a, UPLO)
    return (w, v) if compute_v else (w, np.zeros(0, a.dtype))


def lstsq(a, b, rcond=None, driver=None):
    """PyTorch's outputs: rank for every driver but gels, singular values for gelsd/gelss,
    squared residuals when m > n, the driver is not gelsy and every matrix has full rank."""
    driver = driver or "gelsy"
    vector = b.ndim == a.ndim - 1
    b = b[..., None] if vector else b
    m, n = a.shape[-2:]
    solution = each(lambda x, y: np.linalg.lstsq(x, y, rcond=rcond)[0], [a, b], [2, 2])
    sv = np.linalg.svd(a, compute_uv=False)
    tol = (rcond if rcond is not None else np.finfo(np.float32).eps * max(m, n)) * sv[..., :1]
    rank = (sv > tol).sum(-1).astype(np.int64)
    residuals = np.zeros(0, a.dtype)
    if m > n and driver != "gelsy" and (driver == "gels" or (rank == n).all()):
        residuals = (np.square(a @ solution - b)).sum(-2)
    return (
        solution[..., 0] if vector else solution,
        residuals,
        rank if driver != "gels" else np.zeros(0, np.int64),
        sv if driver in ("gelsd", "gelss") else np.zeros(0, a.dtype),
    )


def ldl_factor_ex(a, hermitian=False, check_errors=False):
    from scipy.linalg.lapack import dsytrf

    def one(m):
        if m.size == 0:
            return m.copy(), np.zeros(0, np.int32), np.int32(0)
        ld, ipiv, info = dsytrf(m, lower=1)
        return np.tril(ld), ipiv.astype(np.int32), np.int32(info)

    return each(one, [a], [2])


def ldl_solve(ld, pivots, b, hermitian=False):
    from scipy.linalg.lapack import dsytrs

    def one(f, p, rhs):
        if rhs.size == 0:
            return rhs.copy()
        return dsytrs(f, p, rhs, lower=1)[0]

    return each(one, [ld, pivots, b], [2, 1, 2])


def _is_vector_rhs(a, b) -> bool:
    return b.ndim == 1 or (a.ndim - 1 == b.ndim and b.shape == a.shape[:-1])


def solve(a, b, left=True):
    vector = _is_vector_rhs(a, b)
    rhs = b[..., None] if vector else b
    if left:
        x = np.linalg.solve(a, rhs)
    else:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(rhs, -1, -2)), -1, -2)
    return x[..., 0] if vector else x


def solve_ex(a, b, left=True, check_errors=False):
    return solve(a, b, left), np.zeros(a.shape[:-2], np.int32)


def inv(a):
    return np.linalg.inv(a)


def inv_ex(a, check_errors=False):
    return inv(a), np.zeros(a.shape[:-2], np.int32)


def det(a):
    return np.linalg.det(a)


def slogdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


def logdet(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return np.where(sign < 0, np.nan, logabsdet)


def lu_factor(a, pivot=True):
    lu, pivots, _ = lu_factor_ex(a)
    return lu, pivots


def lu_unpack(lu, pivots, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])

    def permutation(p):
        perm = np.arange(m)
        for i, j in enumerate(p - 1):
            perm[[i, j]] = perm[[j, i]]
        out = np.zeros((m, m), lu.dtype)
        out[perm, np.arange(m)] = 1
        return out

    perms = each(permutation, [pivots], [1])
    empty = np.zeros(0, lu.dtype)
    return (
        perms if unpack_pivots else empty,
        lower if unpack_data else empty,
        upper if unpack_data else empty,
    )


def lu(a, pivot=True):
    factors, pivots, _ = lu_factor_ex(a)
    return lu_unpack(factors, pivots)


def lu_solve_old(b, lu_data, lu_pivots):
    return lu_solve(lu_data, lu_pivots, b)


def cholesky(a, upper=False):
    return cholesky_ex(a, upper)[0]


def cholesky_solve(b, factor, upper=False):
    lower = np.swapaxes(factor, -1, -2) if upper else np.tril(factor)
    return np.linalg.solve(lower @ np.swapaxes(lower, -1, -2), b)


def cholesky_inverse(factor, upper=False):
    lower = np.swapaxes(np.triu(factor), -1, -2) if upper else np.tril(factor)
    return np.linalg.inv(lower @ np.swapaxes(lower, -1, -2))


def triangular_solve(b, a, upper=True, transpose=False, unitriangular=False):
    t = _triangle(a, upper, unitriangular)
    t = np.swapaxes(t, -1, -2) if transpose else t
    x = np.linalg.solve(t, b)
    return x, np.broadcast_to(a, x.shape[:-2] + a.shape[-2:]).copy()


def linalg_svd(a, full_matrices=True, driver=None):
    return np.linalg.svd(a, full_matrices=full_matrices)


def svdvals(a, driver=None):
    return np.linalg.svd(a, compute_uv=False)


def svd_old(a, some=True, compute_uv=True):
    if not compute_uv:
        m, n = a.shape[-2:]
        zeros = np.zeros
        return zeros(a.shape[:-2] + (m, m)), svdvals(a), zeros(a.shape[:-2] + (n, n))
    u, s, vh = np.linalg.svd(a, full_matrices=not some)
    return u, s, np.swapaxes(vh, -1, -2)


def linalg_eigh(a, UPLO="L"):  # noqa: N803 - PyTorch's argument name
    return np.linalg.eigh(a, UPLO)


def eigvalsh(a, UPLO="L"):  # noqa: N803 - PyTorch's argument name
    return np.linalg.eigvalsh(a, UPLO)


def qr(a, mode="reduced"):
    if mode == "r":
        return np.zeros(0, a.dtype), np.linalg.qr(a, mode="r")
    return tuple(np.linalg.qr(a, mode=mode))


def qr_old(a, some=True):
    return qr(a, "reduced" if some else "complete")


def _tolerance(s, m, n, atol, rtol):
    if rtol is None:
        rtol = np.finfo(np.float32).eps * max(m, n) if atol is None else 0.0
    largest = s.max(-1, keepdims=True) if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
    return np.maximum(0.0 if atol is None else atol, rtol * largest)


def pinv(a, atol=None, rtol=None, hermitian=False):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    tol = _tolerance(s, *a.shape[-2:], atol, rtol)
    inverse = np.where(s > tol, 1 / np.where(s > tol, s, 1), 0)
    return (np.swapaxes(vh, -1, -2) * inverse[..., None, :]) @ np.swapaxes(u, -1, -2)


def pinverse(a, rcond=1e-15):
    return pinv(a, rtol=rcond)


def matrix_rank(a, atol=None, rtol=None, hermitian=False):
    s = np.linalg.svd(a, compute_uv=False)
    return (s > _tolerance(s, *a.shape[-2:], atol, rtol)).sum(-1).astype(np.int64)


def cond(a, p=None):
    return np.linalg.cond(a, p)


def vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    x = np.abs(x.astype(np.float64))
    axis = None if dim is None else tuple(np.atleast_1d(dim))
    if ord == np.inf:
        return x.max(axis=axis, keepdims=keepdim)
    if ord == -np.inf:
        return x.min(axis=axis, keepdims=keepdim)
    if ord == 0:
        return (x != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
    return (x**ord).sum(axis=axis, keepdims=keepdim) ** (1.0 / ord)


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    return np.linalg.norm(a, ord=ord, axis=tuple(dim), keepdims=keepdim)


def norm(a, ord=None, dim=None, keepdim=False, dtype=None):
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is not None:
        dim = tuple(range(a.ndim))
    if dim is not None and len(dim) == 2:
        return matrix_norm(a, "fro" if ord is None else ord, dim, keepdim)
    return vector_norm(a, 2 if ord is None else ord, dim, keepdim)


def cross(a, b, dim=-1):
    a, b = np.broadcast_arrays(a, b)
    return np.moveaxis(np.cross(np.moveaxis(a, dim, -1), np.moveaxis(b, dim, -1)), -1, dim)


def cross_old(a, b, dim=None):
    if dim is None:
        dim = next(i for i, n in enumerate(np.broadcast_shapes(a.shape, b.shape)) if n == 3)
    return cross(a, b, dim)


def vecdot(x, y, dim=-1):
    return (x * y).sum(dim)


def multi_dot(tensors):
    return np.linalg.multi_dot(tensors)


def matrix_power(a, n):
    return np.linalg.matrix_power(a, n)


def tensorinv(a, ind=2):
    return np.linalg.tensorinv(a, ind)


def tensorsolve(a, b, dims=None):
    return np.linalg.tensorsolve(a, b, dims)


def vander(x, N=None):  # noqa: N803 - PyTorch's argument name
    x = x.astype(np.int64) if x.dtype.kind in "iu" else x  # PyTorch's cumprod accumulates in int64
    x = x.reshape(1) if x.ndim == 0 else x
    return (
        np.vander(x, N, increasing=True)
        if x.ndim == 1
        else each(lambda v: np.vander(v, N, increasing=True), [x], [1])
    )


def diagonal(a, offset=0, dim1=-2, dim2=-1):
    return np.diagonal(a, offset, dim1, dim2)


def tensordot(a, b, dims_self, dims_other):
    return np.tensordot(a, b, (list(dims_self), list(dims_other)))


def kron(a, b):
    return np.kron(a, b)


def matrix_exp(a):
    from scipy.linalg import expm

    return expm(a) if a.size else a.copy()
