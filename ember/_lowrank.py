"""Randomized low-rank SVD and PCA (PyTorch's torch._lowrank, Halko et al. 2009, Algorithms 4.4
and 5.1) over ember.linalg's QR and SVD: Python in PyTorch too, so autograd comes from the
parts and the random projection from ember's generator."""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, M, Q), as in PyTorch
from __future__ import annotations

import sys


def _ember():
    return sys.modules["ember"]


def _floating(A):
    """The dtype the projection is drawn in: A's, or the default float for integers."""
    ember = _ember()
    return A.dtype if A.is_floating_point() or A.is_complex() else ember.get_default_dtype()


def get_approximate_basis(A, q: int, niter: int | None = 2, M=None):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M."""
    ember = _ember()
    niter = 2 if niter is None else niter
    R = ember.randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    X = A @ R
    if M is not None:
        X = X - M @ R
    Q = ember.linalg.qr(X).Q
    for _ in range(niter):
        X = A.mH @ Q
        if M is not None:
            X = X - M.mH @ Q
        Q = ember.linalg.qr(X).Q
        X = A @ Q
        if M is not None:
            X = X - M @ Q
        Q = ember.linalg.qr(X).Q
    return Q


def svd_lowrank(A, q: int | None = 6, niter: int | None = 2, M=None):
    """(U, S, V) with A - M approximately U diag(S) V^H, from a q-dimensional random subspace.

    Args:
        A: the input, of shape (*, m, n).
        q: a slightly overestimated rank of A.
        niter: subspace iterations (non-negative).
        M: the mean subtracted from A, broadcast to its shape.

    Returns:
        U (*, m, q), S (*, q), V (*, n, q).

    Example:
        >>> U, S, V = ember.svd_lowrank(ember.randn(20, 5) @ ember.randn(5, 30), q=5)
    """
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mH
        M = None if M is None else M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = Q.mH @ A
    if M is not None:
        B = B - Q.mH @ M
    U, S, Vh = _ember().linalg.svd(B, full_matrices=False)
    V = Vh.mH
    U = Q @ U
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """Principal components of A (samples in rows): (U, S, V) of the centred A, q of them.

    Args:
        A: the data, of shape (*, m, n).
        q: a slightly overestimated rank of A (default min(6, m, n)).
        center: subtract the column means first.
        niter: subspace iterations (non-negative).

    Returns:
        U (*, m, q), S (*, q), V (*, n, q): V's columns are the principal directions.

    Example:
        >>> U, S, V = ember.pca_lowrank(ember.randn(100, 8), q=3)
    """
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A - C, q, niter=niter, M=None)


FUNCTIONS = {"svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank}
