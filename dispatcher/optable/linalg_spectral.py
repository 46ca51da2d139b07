"""QR, SVD and symmetric eigendecompositions of ember.linalg, and what is built on them: pinv,
matrix_rank, cond; with the old top-level names (``ember.svd``, ``ember.qr``, ``ember.pinverse``).
Composites over the primitives of optable/lapack.py; linalg_qr has its own formula (geqrf has
none, as in PyTorch).
"""

# ruff: noqa: N803, N806, SIM300 - matrices keep their mathematical names (A, U, S, Vh), as in PyTorch
from __future__ import annotations

import math

import ember
from ember import return_types as rt

from ..kinds._common import OPS
from ..kinds.matrices import check_matrix
from ..opdef import Promotion
from . import linalg_reference as ref
from .lapack import EIGH_SIGNS, SVD_SIGNS
from .linalg_rows import composite


def _wants_grad(A) -> bool:
    return A.requires_grad and ember.is_grad_enabled()


# ---- SVD and eigh --------------------------------------------------------------------------------


def _svd(A, full_matrices=True, driver=None):
    return rt.linalg_svd(*OPS["_linalg_svd"](A, full_matrices, True, driver))


def _svdvals(A, driver=None):
    # The gradient of S needs U and V: compute them only when it will be asked for.
    return OPS["_linalg_svd"](A, False, _wants_grad(A), driver)[1]


def _svd_old(A, some=True, compute_uv=True):
    check_matrix("linalg.svd", A)
    if not compute_uv:
        m, n = A.shape[-2:]
        S = _svdvals(A)
        like = {"dtype": A.dtype, "device": A.device}
        zeros = ember.zeros
        return rt.svd(zeros(*A.shape[:-2], m, m, **like), S, zeros(*A.shape[:-2], n, n, **like))
    U, S, Vh = OPS["_linalg_svd"](A, not some, True, None)
    return rt.svd(U, S, Vh.mH)


def _eigh(A, UPLO="L"):
    return rt.linalg_eigh(*OPS["_linalg_eigh"](A, UPLO, True))


def _eigvalsh(A, UPLO="L"):
    return OPS["_linalg_eigh"](A, UPLO, _wants_grad(A))[0]


# ---- QR ------------------------------------------------------------------------------------------


def _qr(A, mode="reduced"):
    check_matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    m, n = A.shape[-2:]
    k = min(m, n)
    a, tau = OPS["geqrf"](A)
    rows = m if mode == "complete" else k
    R = a.narrow(-2, 0, rows).triu()
    if mode == "r":
        return rt.linalg_qr(ember.empty(0, dtype=A.dtype, device=A.device), R)
    cols = m if mode == "complete" else k
    if cols > n:  # orgqr ignores the columns past the k reflectors: zeros do
        pad = ember.zeros(*a.shape[:-1], cols - n, dtype=A.dtype, device=A.device)
        reflectors = ember.cat([a, pad], -1)
    else:
        reflectors = a.narrow(-1, 0, cols)
    return rt.linalg_qr(OPS["linalg_householder_product"](reflectors, tau), R)


def _qr_old(A, some=True):
    return rt.qr(*OPS["linalg_qr"](A, "reduced" if some else "complete"))


def _orgqr(A, tau):
    return OPS["linalg_householder_product"](A, tau)


# ---- pinv, rank, cond ----------------------------------------------------------------------------


def _tolerance(S, m, n, atol, rtol):
    """PyTorch's rule: max(atol, rtol * largest singular value), rtol defaulting to
    eps * max(m, n) when neither is given."""
    eps = {ember.float32: 1.1920928955078125e-07, ember.float64: 2.220446049250313e-16}
    if rtol is None:
        rtol = eps.get(S.dtype, 2.220446049250313e-16) * max(m, n) if atol is None else 0.0
    atol = 0.0 if atol is None else atol
    largest = S.amax(-1, keepdim=True) if S.shape[-1] else ember.zeros_like(S.sum(-1, True))
    atol, rtol = _as_tensor(atol, S).unsqueeze(-1), _as_tensor(rtol, S).unsqueeze(-1)
    return ember.maximum(atol, rtol * largest)


def _as_tensor(value, like):
    if isinstance(value, ember.Tensor):
        return value.to(like.dtype)
    return ember.full((), float(value), dtype=like.dtype, device=like.device)


def _check_pinv(A):
    if (
        not isinstance(A, ember.Tensor)
        or A.ndim < 2
        or A.dtype
        not in (
            ember.float32,
            ember.float64,
            ember.complex64,
            ember.complex128,
        )
    ):
        what = "Tensor" if not isinstance(A, ember.Tensor) else _describe(A)
        raise RuntimeError(
            f"linalg.pinv({what}): expected a tensor with 2 or more dimensions of float, double, "
            "cfloat or cdouble types"
        )


def _describe(A) -> str:
    from ..kinds.matrices import SCALAR_NAMES

    return f"{SCALAR_NAMES.get(A.dtype.name, A.dtype.name)}{{{list(A.shape)}}}"


def _pinv(A, atol=None, rtol=None, hermitian=False):
    _check_pinv(A)
    m, n = A.shape[-2:]
    if hermitian:
        L, V = OPS["_linalg_eigh"](A, "L", True)
        tol = _tolerance(L.abs(), m, n, atol, rtol)
        inverse = ember.where(L.abs() > tol, 1 / L, ember.zeros_like(L))
        return (V * inverse.unsqueeze(-2)) @ V.mH
    U, S, Vh = OPS["_linalg_svd"](A, False, True, None)
    tol = _tolerance(S, m, n, atol, rtol)
    inverse = ember.where(S > tol, 1 / S, ember.zeros_like(S))
    return (Vh.mH * inverse.unsqueeze(-2)) @ U.mH


def _pinverse(A, rcond=1e-15):
    return OPS["linalg_pinv"](A, None, rcond, False)  # the row, for its formula


def _matrix_rank(A, atol=None, rtol=None, hermitian=False):
    check_matrix("torch.linalg.matrix_rank", A, what="input")
    m, n = A.shape[-2:]
    if hermitian:
        S = OPS["_linalg_eigh"](A, "L", False)[0].abs()
    else:
        S = OPS["_linalg_svd"](A, False, False, None)[1]
    return (S > _tolerance(S, m, n, atol, rtol)).sum(-1)


_COND_NORMS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def _cond(A, p=None):
    if not isinstance(A, ember.Tensor) or A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    check_matrix("linalg.cond", A)
    if p in (None, 2, -2):
        S = _svdvals(A)
        if S.shape[-1] == 0:
            return ember.zeros(A.shape[:-2], dtype=A.dtype, device=A.device)
        return S[..., -1] / S[..., 0] if p == -2 else S[..., 0] / S[..., -1]
    if p not in _COND_NORMS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    check_matrix("linalg.cond", A, square=True)
    inverse, info = OPS["linalg_inv_ex"](A, False)
    norm = OPS["linalg_matrix_norm"]
    value = norm(A, p, (-2, -1), False, None) * norm(inverse, p, (-2, -1), False, None)
    # A singular matrix has an infinite condition number (its inverse overflowed or is NaN).
    return ember.where(info > 0, ember.full_like(value, math.inf), value)


ROWS = [
    composite("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None) "
              "-> (Tensor U, Tensor S, Tensor Vh)", _svd, ref.linalg_svd, "svd", signs=SVD_SIGNS),
    composite("linalg_svdvals(Tensor A, *, str? driver=None) -> Tensor", _svdvals,
              ref.svdvals, "svd", display="linalg.svd"),
    composite("svd(Tensor input, bool some=True, bool compute_uv=True) "
              "-> (Tensor U, Tensor S, Tensor V)", _svd_old, ref.svd_old, "svd", old=True,
              display="linalg.svd", signs={0: -2, 2: -2}),
    composite("linalg_eigh(Tensor input, str UPLO=\"L\") "
              "-> (Tensor eigenvalues, Tensor eigenvectors)", _eigh, ref.linalg_eigh,
              "symmetric", signs=EIGH_SIGNS),
    composite("linalg_eigvalsh(Tensor input, str UPLO=\"L\") -> Tensor", _eigvalsh,
              ref.eigvalsh, "symmetric", display="linalg.eigh"),
    composite("linalg_qr(Tensor A, str mode=\"reduced\") -> (Tensor Q, Tensor R)", _qr,
              ref.qr, "qr"),
    composite("qr(Tensor input, bool some=True) -> (Tensor Q, Tensor R)", _qr_old, ref.qr_old,
              "rectangular", old=True, display="linalg.qr"),
    composite("orgqr(Tensor input, Tensor input2) -> Tensor", _orgqr, ref.householder_product,
              "householder", old=True, display="torch.linalg.householder_product"),
    composite("linalg_pinv(Tensor input, *, float? atol=None, float? rtol=None, "
              "bool hermitian=False) -> Tensor", _pinv, ref.pinv, "pinv"),
    composite("pinverse(Tensor input, float rcond=1e-15) -> Tensor", _pinverse, ref.pinverse,
              "rectangular", old=True, display="linalg.pinv"),
    composite("linalg_matrix_rank(Tensor input, *, float? atol=None, float? rtol=None, "
              "bool hermitian=False) -> Tensor", _matrix_rank, ref.matrix_rank, "pinv",
              display="torch.linalg.matrix_rank", differentiable=False,
              promotion=Promotion.LONG),
    composite("linalg_cond(Tensor input, Scalar? p=None) -> Tensor", _cond, ref.cond, "cond"),
]  # fmt: skip
