"""Solves, inverses and determinants of ember.linalg, and their old top-level names: composites
over the LU, Cholesky and triangular-solve primitives (optable/lapack.py), so their gradients
come from those primitives' formulas (double backward included).
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, B, LU), as in PyTorch
from __future__ import annotations

import math

import ember
from ember import _dtype as dt
from ember import return_types as rt

from ..kinds._common import OPS, missing_kernel
from ..kinds.matrices import (
    check_matrix,
    check_same,
    check_tensor,
    raise_info,
)
from . import linalg_reference as ref
from .linalg_rows import composite

# ---- solve and inverse ---------------------------------------------------------------------------


def is_vector_rhs(A, B) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when 1-D, or shaped like A without its last
    dim."""
    return B.ndim == 1 or (A.ndim - 1 == B.ndim and tuple(B.shape) == tuple(A.shape[:-1]))


def singular_solve(code: int) -> str:
    return "The solver failed because the input matrix is singular."


def singular_inverse(code: int) -> str:
    return (
        f"The diagonal element {code} is zero, the inversion could not be completed because the "
        "input matrix is singular."
    )


def _solve_ex(A, B, left=True, check_errors=False):
    return _solve_checked(A, B, left, "torch.linalg.solve_ex" if check_errors else None)


def _solve_checked(A, B, left, error_name):
    """solve_ex; a singular matrix raises LinAlgError naming ``error_name`` unless it is None."""
    name = "linalg.solve"
    check_matrix(name, A, square=True)
    check_tensor(name, B, "B")
    check_same(name, A, B)
    vector = is_vector_rhs(A, B)
    rhs = B.unsqueeze(-1) if vector else B
    if not left:
        rhs = rhs.mT
    n = A.shape[-1]
    if rhs.shape[-2] != n:
        shape = f"{rhs.shape[-2]}x{rhs.shape[-1]}" if not vector else f"{B.shape[-1]}x1"
        raise RuntimeError(
            f"{name}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape})"
        )
    # As PyTorch: a row-major real A is factored as A^T, whose column-major copy for LAPACK is
    # a plain copy rather than a transposing one, and solved with that LU's transpose.
    use_a_t = A.is_contiguous() and not A.dtype.is_complex
    LU, pivots, info = OPS["linalg_lu_factor_ex"](A.mT if use_a_t else A)
    if error_name:
        raise_info(info, error_name, singular_solve, A.ndim > 2)
    X = OPS["linalg_lu_solve"](LU, pivots, rhs, True, (not left) != use_a_t)
    X = X.mT if not left else X
    return rt.linalg_solve_ex(X.squeeze(-1) if vector else X, info)


def _solve(A, B, left=True):
    return _solve_checked(A, B, left, "torch.linalg.solve").result


def _inv_ex(A, check_errors=False):
    return inv_checked(A, "linalg.inv_ex" if check_errors else None)


def inv_checked(A, error_name):
    """inv_ex; a singular matrix raises LinAlgError naming ``error_name`` unless it is None
    (PyTorch's messages name the function called: ``linalg.inv``, ``linalg.inv_ex``, and
    ``inv`` for tensorinv)."""
    check_matrix("linalg.inv", A, square=True)
    LU, pivots, info = OPS["linalg_lu_factor_ex"](A)
    if error_name:
        raise_info(info, error_name, singular_inverse, A.ndim > 2)
    n = A.shape[-1]
    eye = ember.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape)
    return rt.linalg_inv_ex(OPS["linalg_lu_solve"](LU, pivots, eye), info)


def _inv(A):
    return inv_checked(A, "linalg.inv").inverse


# ---- determinants --------------------------------------------------------------------------------


def _lu_det_parts(A, name):
    """LU of A, the sign of its row permutation and the diagonal of U."""
    check_matrix(name, A, square=True)
    LU, pivots, _ = OPS["linalg_lu_factor_ex"](A)
    n = A.shape[-1]
    steps = ember.arange(1, n + 1, dtype=ember.int32, device=A.device)
    swaps = (pivots != steps).sum(-1)
    perm_sign = 1 - 2 * (swaps % 2).to(A.dtype)
    return LU, perm_sign, LU.diagonal(0, -2, -1)


def _det(A):
    _, perm_sign, diag = _lu_det_parts(A, "linalg.det")
    return perm_sign * diag.prod(-1)


def _slogdet_parts(A, name):
    _, perm_sign, diag = _lu_det_parts(A, name)
    sign = perm_sign * ember.sgn(diag).prod(-1)  # a unit complex number for complex A
    return sign, ember.log(diag.abs()).sum(-1)


def _det_old(A):
    return OPS["linalg_det"](A)  # the same op, so the same formula


def _slogdet(A):
    return rt.linalg_slogdet(*_slogdet_parts(A, "linalg.slogdet"))


def _slogdet_old(A):
    return rt.slogdet(*_slogdet_parts(A, "linalg.slogdet"))


def _logdet(A):
    sign, logabsdet = _slogdet_parts(A, "logdet")
    if A.dtype.is_complex:  # the complex log of det: log(sign) + log|det|, as PyTorch's
        return ember.log(sign) + logabsdet
    return ember.where(sign < 0, ember.full_like(logabsdet, float("nan")), logabsdet)


# ---- LU ------------------------------------------------------------------------------------------


def _lu_factor(A, pivot=True):
    check_tensor("torch.linalg.lu_factor", A)
    if A.ndim < 2:
        raise RuntimeError(
            "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
            f"{list(A.shape)} instead"
        )
    LU, pivots, info = OPS["linalg_lu_factor_ex"](A, pivot, False)
    raise_info(info, "torch.linalg.lu_factor", _lu_singular_message, A.ndim > 2, RuntimeError)
    return rt.linalg_lu_factor(LU, pivots)


def _lu(A, pivot=True):
    return lu_of(A, pivot, permutation_matrix)


def lu_of(A, pivot, permutation):
    """linalg.lu, P built by ``permutation(pivots, m, LU)`` (on meta: meta_rules.py)."""
    check_tensor("linalg.lu", A)
    if A.ndim < 2:
        raise RuntimeError(
            f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
            "instead"
        )
    LU, pivots, _ = OPS["linalg_lu_factor_ex"](A, pivot)
    return rt.linalg_lu(*unpack_lu(LU, pivots, True, True, permutation))


def permutation_of(pivots, m: int):
    """The row permutation LAPACK's pivots (1-based swaps, applied in order) describe, as
    ``perm`` with ``A[perm] = L U``: int64 on the host (pivots are small; one device read)."""
    import numpy as np

    from ..kinds.matrices import host_ints

    batch = math.prod(pivots.shape[:-1])
    swaps = host_ints(pivots).astype(np.int64).reshape(batch, pivots.shape[-1]) - 1
    perm = np.tile(np.arange(m), (batch, 1))
    rows = np.arange(batch)
    for i in range(swaps.shape[1]):
        j = swaps[:, i]
        held = perm[rows, i].copy()
        perm[rows, i] = perm[rows, j]
        perm[rows, j] = held
    return perm


def permutation_matrix(pivots, m: int, LU):
    """P with ``A = P L U``, from LAPACK's pivots (built on the host)."""
    import numpy as np

    perm = permutation_of(pivots, m)
    P = np.zeros((perm.shape[0], m, m), LU.dtype.np)
    P[np.arange(perm.shape[0])[:, None], perm, np.arange(m)[None, :]] = 1
    return ember.from_numpy(P.reshape(*LU.shape[:-2], m, m)).to(LU.device)


def _lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    return unpack_lu(LU_data, LU_pivots, unpack_data, unpack_pivots, permutation_matrix)


def unpack_lu(LU_data, LU_pivots, unpack_data, unpack_pivots, permutation):
    """lu_unpack, P built by ``permutation(pivots, m, LU)`` (on meta: meta_rules.py)."""
    name = "lu_unpack"
    check_matrix(name, LU_data, what="LU_data")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    batch = tuple(LU_data.shape[:-2])
    like = {"dtype": LU_data.dtype, "device": LU_data.device}
    if unpack_data:
        eye = ember.eye(m, k, **like)
        L = LU_data.narrow(-1, 0, k).tril(-1) + eye
        U = LU_data.narrow(-2, 0, k).triu()
    else:
        L = U = ember.empty(0, **like)
    if not unpack_pivots:
        return rt.lu_unpack(ember.empty(0, **like), L, U)
    if tuple(LU_pivots.shape) != (*batch, k):
        raise RuntimeError(
            f"{name}: Expected LU_pivots.shape[-1] to be {k} and the batch dims of LU_data and "
            f"LU_pivots to match, got {list(LU_pivots.shape)}"
        )
    return rt.lu_unpack(permutation(LU_pivots, m, LU_data), L, U)


def _lu_solve_old(b, LU_data, LU_pivots):
    return OPS["linalg_lu_solve"](LU_data, LU_pivots, b)


def _lu_old(A, pivot=True, get_infos=False):
    LU, pivots, info = OPS["linalg_lu_factor_ex"](A, pivot)
    if get_infos:
        return LU, pivots, info
    raise_info(info, "torch.linalg.lu_factor", _lu_singular_message, A.ndim > 2, RuntimeError)
    return LU, pivots


def _lu_singular_message(code: int) -> str:
    from ..kinds.lapack import lu_singular

    return lu_singular(code)


# ---- Cholesky ------------------------------------------------------------------------------------


def _cholesky(A, upper=False):
    return OPS["linalg_cholesky_ex"](A, upper, True).L


# the dtypes of PyTorch's CPU kernel of the deprecated cholesky
_CHOLESKY_CPU = frozenset({dt.float32, dt.float64, dt.complex64, dt.complex128})


def _cholesky_old(A, upper=False):
    """PyTorch's deprecated cholesky: an empty input comes back as an empty tensor like it
    before any check (any dtype or shape, on the graph); a batch of square matrices of a dtype
    its kernel lacks is that kernel's NotImplementedError."""
    if A.numel() == 0:  # nothing to compute: a contiguous copy keeps the graph (and dtype)
        return A.contiguous().clone()
    if A.ndim >= 2 and A.shape[-1] == A.shape[-2] and A.dtype not in _CHOLESKY_CPU:
        raise missing_kernel("cholesky_cpu", A.dtype)
    check_matrix("cholesky", A, square=True)
    return OPS["linalg_cholesky_ex"](A, upper, True).L


def _cholesky_solve(B, L, upper=False):
    check_tensor("cholesky_solve", B, "input")
    check_tensor("cholesky_solve", L, "input2")
    if B.ndim < 2:
        raise RuntimeError(
            f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead"
        )
    if L.ndim < 2:
        raise RuntimeError(
            f"u should have at least 2 dimensions, but has {L.ndim} dimensions instead"
        )
    check_matrix("cholesky_solve", L, square=True)
    check_same("cholesky_solve", L, B)
    solve = OPS["linalg_solve_triangular"]
    if upper:  # A = U^H U
        return solve(L, solve(L.mH, B, False), True)
    return solve(L.mH, solve(L, B, False), True)


def _cholesky_inverse(L, upper=False):
    check_matrix("cholesky_inverse", L, square=True)
    # LAPACK's potri refuses a zero on the factor's diagonal (info: its 1-based index), as here.
    if L.shape[-1]:
        zero = L.diagonal(0, -2, -1) == 0
        info = ember.where(zero.any(-1), zero.to(ember.int32).argmax(-1) + 1, 0)
        raise_info(info, "cholesky_inverse", singular_inverse, L.ndim > 2)
    n = L.shape[-1]
    eye = ember.eye(n, dtype=L.dtype, device=L.device).expand(*L.shape)
    return _cholesky_solve(eye, L, upper)


# ---- triangular ----------------------------------------------------------------------------------


def _triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    check_tensor("torch.triangular_solve", b, "input")
    if b.ndim < 2:
        raise RuntimeError(
            "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
            f"{b.ndim} dimensions instead"
        )
    coefficient = A.mT if transpose else A
    X = OPS["linalg_solve_triangular"](coefficient, b, upper != transpose, True, unitriangular)
    batch = tuple(X.shape[:-2])
    return rt.triangular_solve(X, A.expand(*batch, *A.shape[-2:]).clone())


ROWS = [
    composite("linalg_solve_ex(Tensor A, Tensor B, *, bool left=True, bool check_errors=False) "
              "-> (Tensor result, Tensor info)", _solve_ex, ref.solve_ex, "solve"),
    composite("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", _solve,
              ref.solve, "solve"),
    composite("linalg_inv_ex(Tensor A, *, bool check_errors=False) -> (Tensor inverse, "
              "Tensor info)", _inv_ex, ref.inv_ex, "square"),
    composite("linalg_inv(Tensor A) -> Tensor", _inv, ref.inv, "square"),
    composite("inverse(Tensor input) -> Tensor", _inv, ref.inv, "square", old=True,
              display="linalg.inv"),
    composite("linalg_det(Tensor A) -> Tensor", _det, ref.det, "square"),
    composite("det(Tensor input) -> Tensor", _det_old, ref.det, "square", old=True,
              display="linalg.det"),
    composite("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)", _slogdet,
              ref.slogdet, "square"),
    composite("slogdet(Tensor input) -> (Tensor sign, Tensor logabsdet)", _slogdet_old,
              ref.slogdet, "square", old=True, display="linalg.slogdet"),
    composite("logdet(Tensor input) -> Tensor", _logdet, ref.logdet, "positive_definite",
              old=True),
    composite("linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)",
              _lu_factor, ref.lu_factor, "lu_factor", display="torch.linalg.lu_factor"),
    composite("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)", _lu,
              ref.lu, "lu_factor", display="torch.linalg.lu_factor"),
    composite("lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
              "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)", _lu_unpack,
              ref.lu_unpack, "lu_unpack", old=True, method=False),
    composite("lu_solve(Tensor input, Tensor LU_data, Tensor LU_pivots) -> Tensor",
              _lu_solve_old, ref.lu_solve_old, "lu_solve_old", old=True,
              display="torch.linalg.lu_solve"),
    composite("linalg_cholesky(Tensor input, *, bool upper=False) -> Tensor", _cholesky,
              ref.cholesky, "positive_definite", display="linalg.cholesky"),
    composite("cholesky(Tensor input, bool upper=False) -> Tensor", _cholesky_old, ref.cholesky,
              "positive_definite", old=True),
    composite("cholesky_solve(Tensor input, Tensor input2, bool upper=False) -> Tensor",
              _cholesky_solve, ref.cholesky_solve, "cholesky_solve", old=True),
    composite("cholesky_inverse(Tensor input, bool upper=False) -> Tensor", _cholesky_inverse,
              ref.cholesky_inverse, "cholesky_factor", old=True),
    composite("triangular_solve(Tensor input, Tensor A, bool upper=True, bool transpose=False, "
              "bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)",
              _triangular_solve, ref.triangular_solve, "triangular_solve_old", old=True,
              display="linalg.solve_triangular"),
]  # fmt: skip
