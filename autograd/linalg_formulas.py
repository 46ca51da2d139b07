"""Backward formulas of the linalg ops, PyTorch's (torch/csrc/autograd/FunctionsManual.cpp), in
ember ops: they run on every device and are differentiable themselves (double backward).

Merged into the one table of autograd/formulas.py. Real dtypes: where PyTorch conjugates, the
transposes here are ``mH`` already, so complex dtypes need only the diagonal corrections PyTorch
makes for them (marked "complex:").
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, L, U, Q, R, S, V)
from __future__ import annotations

import ember as E

from .eig_formula import FORMULAS as EIG_FORMULAS
from .formula import Formula as F  # noqa: N817 - the table reads better with one letter
from .formula import sum_to_shape


def _solve_triangular(A, B, upper, left=True, unitriangular=False):
    return E.ops.linalg_solve_triangular(A, B, upper, left, unitriangular)


def _diag_embed(v):
    """A batch of diagonal matrices from a batch of vectors (differentiable)."""
    n = v.shape[-1]
    return v.unsqueeze(-1) * E.eye(n, dtype=v.dtype, device=v.device)


def _add(a, b):
    return b if a is None else a + b


# ---- LU ------------------------------------------------------------------------------------------


def lu_backward(gL, gU, P, L, U):
    """A = P L U (L m x k unit lower, U k x n upper): the gradient of A from those of L and U."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m == n:
        # gA = P L^{-H} [tril(L^H gL, -1) + triu(gU U^H)] U^{-H}
        gA = _add(
            None if gL is None else (L.mH @ gL).tril(-1),
            None if gU is None else (gU @ U.mH).triu(),
        )
        gA = _solve_triangular(U.mH, gA, False, left=False)
        gA = _solve_triangular(L.mH, gA, True, unitriangular=True)
        return P @ gA
    if m < n:
        # A = P L [U1 | U2]: gA1 = P L^{-H} [triu(gU1) + tril(L^H gL - gU U^H, -1) U1^{-H}],
        # gA2 = P L^{-H} gU2
        U1 = U.narrow(-1, 0, k)
        gA = _add(None if gL is None else L.mH @ gL, None if gU is None else -(gU.triu() @ U.mH))
        gA = _solve_triangular(U1.mH, gA.tril(-1), False, left=False)
        if gU is not None:
            gA = E.cat([gA + gU.narrow(-1, 0, k).triu(), gU.narrow(-1, k, n - k)], -1)
        gA = _solve_triangular(L.mH, gA, True, unitriangular=True)
        if gU is None:
            gA = E.cat([gA, E.zeros_like(U.narrow(-1, k, n - k))], -1)
        return P @ gA
    # Tall: A = P [L1; L2] U: gA1 = P [tril(gL1, -1) + L1^{-H} triu(gU U^H - L^H gL)] U^{-H},
    # gA2 = P gL2 U^{-H}
    L1 = L.narrow(-2, 0, k)
    gA = _add(None if gU is None else gU @ U.mH, None if gL is None else -(L.mH @ gL.tril(-1)))
    gA = _solve_triangular(L1.mH, gA.triu(), True, unitriangular=True)
    if gL is not None:
        gA = E.cat([gA + gL.narrow(-2, 0, k).tril(-1), gL.narrow(-2, k, m - k)], -2)
    gA = _solve_triangular(U.mH, gA, False, left=False)
    if gL is None:
        gA = E.cat([gA, E.zeros_like(L.narrow(-2, k, m - k))], -2)
    return P @ gA


def _lu_factor_ex(ctx, gLU, g_pivots=None, g_info=None):
    LU, pivots, _ = ctx.result
    P, L, U = E.ops.lu_unpack(LU, pivots, True, True)
    m, n = LU.shape[-2:]
    k = min(m, n)
    return lu_backward(gLU.narrow(-1, 0, k), gLU.narrow(-2, 0, k), P, L, U)


def _lu_solve(ctx, gX):
    """linalg_lu_solve_LU and the B gradient (PyTorch's, with op_1/op_2/op_3 as there)."""
    LU, pivots, X, left, adjoint = ctx.LU, ctx.pivots, ctx.result, ctx.left, ctx.adjoint
    need_lu, _, need_b = ctx.needs_input_grad
    gB = E.ops.linalg_lu_solve(LU, pivots, gX, left, not adjoint) if need_b else None
    if not need_lu:
        return None, None, gB
    P, L, U = E.ops.lu_unpack(LU, pivots, True, left == adjoint)
    if left != adjoint:
        # gR = U^{-H} op_2(-gX) op_2(X)^H; gLU = tril(L^{-H} gR U^H, -1) + triu(gR)
        gR = -(gX @ X.mH) if left else -(gX.mH @ X)
        gR = _solve_triangular(U.mH, gR, False)
        gL = _solve_triangular(L.mH, gR @ U.mH, True, unitriangular=True).tril(-1)
        return gL + gR.triu(), None, gB
    # gR = -P^T op_3(X) op_1(op_2(gX)) P L^{-H}; gLU = tril(gR, -1) + triu(L^H gR U^{-H})
    gR = -(P.mT @ (X if left else X.mH) @ (gX.mH if left else gX) @ P)
    gR = _solve_triangular(L.mH, gR, True, left=False, unitriangular=True)
    gU = _solve_triangular(U.mH, L.mH @ gR, False, left=False).triu()
    return gR.tril(-1) + gU, None, gB


# ---- Cholesky and triangular solves --------------------------------------------------------------


def _cholesky_ex(ctx, gL, g_info=None):
    """Iain Murray (2016), arXiv:1602.07527, as PyTorch writes it: a Hermitian gradient."""
    L = ctx.result[0]
    if ctx.upper:
        L, gL = L.mH, gL.mH
    gA = (L.mH @ gL).tril()
    gA = 0.5 * (gA + gA.tril(-1).mH)
    gA = _solve_triangular(L.mH, gA, True)
    return _solve_triangular(L, gA, False, left=False)


def _solve_triangular_formula(ctx, gX):
    A, X, upper, left, unit = ctx.input, ctx.result, ctx.upper, ctx.left, ctx.unitriangular
    need_a, _ = ctx.needs_input_grad
    gB = _solve_triangular(A.mH, gX, not upper, left, unit)
    if not need_a:
        return None, gB
    gA = -(gB @ X.mH) if left else -(X.mH @ gB)
    gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
    return gA, gB


# ---- QR and Householder products -----------------------------------------------------------------


def _copyltu(M):
    """The Hermitian matrix with M's lower triangle: tril(M) + tril(M, -1)^H."""
    return M.tril() + M.tril(-1).mH


def _qr(ctx, gQ, gR):
    """Walter and Lehmann (2018), the reduced case; a wide A = [X | Y], R = [U | V] carries Y."""
    if ctx.mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
            "linalg.qr."
        )
    Q, R = ctx.result
    m, n = Q.shape[-2], R.shape[-1]
    if ctx.mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )
    gQ = E.zeros_like(Q) if gQ is None else gQ
    gR = E.zeros_like(R) if gR is None else gR
    if m >= n:
        M = R @ gR.mH - gQ.mH @ Q
        return _solve_triangular(R.mH, gQ + Q @ _copyltu(M), False, left=False)
    A = ctx.A
    U, gU, gV = R.narrow(-1, 0, m), gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
    Y = A.narrow(-1, m, n - m)
    gQ = gQ + Y @ gV.mH
    M = U @ gU.mH - gQ.mH @ Q
    gX = _solve_triangular(U.mH, gQ + Q @ _copyltu(M), False, left=False)
    return E.cat([gX, Q @ gV], -1)


def _householder_product(ctx, gQ):
    """Q = H_1 ... H_k E (E: the first n columns of I), H_i = I - tau_i v_i v_i^H. With
    left_i = (H_1 ... H_{i-1})^H gQ and right_i = H_{i+1} ... H_k E, the gradient of H_i is
    left_i right_i^H, so g tau_i = -v_i^H left_i right_i^H v_i and g v_i =
    -tau_i (left_i right_i^H + right_i left_i^H) v_i (real dtypes), in O(m n) per reflector."""
    A, tau = ctx.input, ctx.tau
    if A.numel() == 0 or tau.numel() == 0:
        return None, None  # Q is the identity's first columns: no gradient, as in PyTorch
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    like = {"dtype": A.dtype, "device": A.device}
    vs = []
    for i in range(k):
        head = E.cat([E.zeros(i, **like), E.ones(1, **like)]).expand(*A.shape[:-2], i + 1)
        vs.append(E.cat([head, A[..., i + 1 :, i]], -1))

    def reflect(i, X):  # H_i X (H_i^H = H_i for real tau)
        v, t = vs[i], tau[..., i].unsqueeze(-1).unsqueeze(-1)
        return X - t * v.unsqueeze(-1) * (v.unsqueeze(-2) @ X)

    rights = [E.eye(m, n, **like).expand(*A.shape[:-2], m, n)]
    for i in range(k - 1, 0, -1):
        rights.append(reflect(i, rights[-1]))
    rights.reverse()  # rights[i] = H_{i+1} ... H_k E
    g_tau, g_columns, left = [], [], gQ
    for i in range(k):
        v, right = vs[i], rights[i]
        a = (left.mH @ v.unsqueeze(-1)).squeeze(-1)  # left^H v
        b = (right.mH @ v.unsqueeze(-1)).squeeze(-1)  # right^H v
        g_tau.append(-(a * b).sum(-1))
        t = tau[..., i].unsqueeze(-1)
        g_v = -t * ((left @ b.unsqueeze(-1)).squeeze(-1) + (right @ a.unsqueeze(-1)).squeeze(-1))
        g_columns.append(E.cat([E.zeros_like(g_v[..., : i + 1]), g_v[..., i + 1 :]], -1))
        left = reflect(i, left)
    g_columns += [E.zeros(*A.shape[:-2], m, **like)] * (n - k)
    return E.stack(g_columns, -1), E.stack(g_tau, -1)


# ---- SVD and eigh --------------------------------------------------------------------------------


def svd_backward(gU, gS, gVh, U, S, Vh):
    """PyTorch's svd_backward (distinct singular values; full rank when A is rectangular)."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        return U @ (gS.unsqueeze(-1) * Vh) if m >= n else (U * gS.unsqueeze(-2)) @ Vh
    S2 = S * S
    k = S.shape[-1]
    eye = E.eye(k, dtype=S.dtype, device=S.device)
    # E[j, l] = S_l^2 - S_j^2 off the diagonal, 1 on it (the diagonal of the skews is 0)
    Ediff = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    UhgU = None if gU is None else U.mH @ gU - gU.mH @ U
    VhgV = None if gVh is None else Vh @ gVh.mH - gVh @ Vh.mH
    if UhgU is not None and VhgV is not None:
        inner = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / Ediff
    elif UhgU is not None:
        inner = UhgU * (S.unsqueeze(-2) / Ediff)
    else:
        inner = S.unsqueeze(-1) * (VhgV / Ediff)
    if gS is not None:
        inner = inner + _diag_embed(gS)
    if m > n and gU is not None:
        gA = U @ inner
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = inner @ Vh
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - (SinvgVh @ Vh.mH) @ Vh
        return U @ gA
    return U @ (inner @ Vh) if m >= n else (U @ inner) @ Vh


def _svd(ctx, gU, gS, gVh):
    if not ctx.compute_uv:
        raise RuntimeError(
            "linalg.svd: The derivative of linalg.svd depends on U and V, which are not computed "
            "when compute_uv=False. Use linalg.svd(A, full_matrices=False) to differentiate it."
        )
    U, S, Vh = ctx.result
    if ctx.full_matrices:
        k = S.shape[-1]
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU = None if gU is None else gU.narrow(-1, 0, k)
        gVh = None if gVh is None else gVh.narrow(-2, 0, k)
    return svd_backward(gU, gS, gVh, U, S, Vh)


def _eigh(ctx, gL, gV):
    L, V = ctx.result
    if gV is None:
        return (V * gL.unsqueeze(-2)) @ V.mH
    if V.numel() == 0 and L.numel() != 0:
        raise RuntimeError(
            "linalg.eigh: The derivative of the eigenvectors is not computed when compute_v=False."
        )
    VhgV = V.mH @ gV
    VhgV = 0.5 * (VhgV - VhgV.mH)  # the skew-Hermitian part: the tangent space of U(n)
    n = L.shape[-1]
    Ediff = L.unsqueeze(-2) - L.unsqueeze(-1) + E.eye(n, dtype=L.dtype, device=L.device)
    inner = VhgV / Ediff
    if gL is not None:
        inner = inner + _diag_embed(gL)
    return V @ (inner @ V.mH)


def _cholesky_factor_grad(F, common, upper):
    """The gradient of a Cholesky factor F through A = F F^H (or F^H F): not masked to F's
    triangle, as PyTorch's cholesky_inverse/cholesky_solve backward."""
    return -(F @ common) if upper else -(common @ F)


def _cholesky_inverse(ctx, g):
    inverse = ctx.result
    common = inverse @ (g + g.mH) @ inverse
    return _cholesky_factor_grad(ctx.input, common, ctx.upper)


def _cholesky_solve(ctx, gX):
    B, F, X, upper = ctx.input, ctx.input2, ctx.result, ctx.upper
    need_b, need_f = ctx.needs_input_grad
    gB = E.ops.cholesky_solve(gX, F, upper)
    gF = None
    if need_f:
        common = gB @ X.mH
        gF = sum_to_shape(_cholesky_factor_grad(F, common + common.mH, upper), F.shape)
    return (sum_to_shape(gB, B.shape) if need_b else None), gF


# ---- least squares, determinants, exp ------------------------------------------------------------


def pinv_backward(g, pinvA, A):
    m, n = A.shape[-2:]
    pinvAh, gh = pinvA.mH, g.mH
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        return -(pinvA @ K).mH + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gh - K @ A)
    K = pinvA @ gh
    pinvAhK = pinvAh @ K
    return -(K @ pinvA).mH + (gh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A


def _pinv(ctx, g):
    """PyTorch's pinv_backward for every path (hermitian too): finite at singular inputs, where
    differentiating through the factorization divides by equal or zero singular values."""
    return pinv_backward(g, ctx.result, ctx.input)


def _lstsq(ctx, gX, g_residuals=None, g_rank=None, g_sv=None):
    A, B = ctx.input, ctx.b
    need_a, need_b = ctx.needs_input_grad
    vector = B.ndim == A.ndim - 1
    B = B.unsqueeze(-1) if vector else B
    X = ctx.result[0]
    X = X.unsqueeze(-1) if vector else X
    gA = gB = None
    if gX is not None:
        gX = gX.unsqueeze(-1) if vector else gX
        pinvA = E.ops.linalg_pinv(A, None, None, False)
        gA = pinv_backward(gX @ B.mH, pinvA, A) if need_a else None
        gB = pinvA.mH @ gX if need_b else None
    if g_residuals is not None and g_residuals.numel():
        # At the optimum the residual's derivative through X vanishes (envelope theorem).
        R = A @ X - B
        weighted = 2 * R * g_residuals.unsqueeze(-2)
        gA = _add(gA, weighted @ X.mH) if need_a else None
        gB = _add(gB, -weighted) if need_b else None
    if vector and gB is not None:
        gB = gB.squeeze(-1)
    return gA, gB


def _prod_others(x):
    """prod_{j != i} x_j along the last dim, for each i (zero-safe)."""
    ones = E.ones_like(x.narrow(-1, 0, 1))
    left = E.cat([ones, x.narrow(-1, 0, x.shape[-1] - 1)], -1).cumprod(-1)
    right = E.cat([x.narrow(-1, 1, x.shape[-1] - 1), ones], -1).flip(-1).cumprod(-1).flip(-1)
    return left * right


def _det(ctx, g):
    """det(A) A^{-H} where A is invertible; for singular A the cofactors through the SVD,
    det(U) det(V^H) U diag(prod_{j != i} S_j) V^H, as PyTorch does."""
    A, det = ctx.A, ctx.result
    d = (g * det.conj()).unsqueeze(-1).unsqueeze(-1)  # conj: PyTorch's linalg_det_backward
    singular = det == 0
    if not bool(singular.any()):
        return d * E.ops.linalg_inv_ex(A, False)[0].mH
    U, S, Vh = E.ops.linalg_svd(A, False, None)
    alpha = (E.ops.linalg_det(U) * E.ops.linalg_det(Vh)).conj() * g
    cofactors = (U * (alpha.unsqueeze(-1) * _prod_others(S)).unsqueeze(-2)) @ Vh
    if bool(singular.all()):
        return cofactors
    regular = d * E.ops.linalg_inv_ex(A, False)[0].mH
    return E.where(singular.unsqueeze(-1).unsqueeze(-1), cofactors, regular)


def _matrix_exp(ctx, g):
    """The adjoint of the Frechet derivative: the upper-right block of exp([[A^H, G], [0, A^H]])."""
    A = ctx.input
    n = A.shape[-1]
    top = E.cat([A.mH, g], -1)
    bottom = E.cat([E.zeros_like(A), A.mH], -1)
    block = E.ops.linalg_matrix_exp(E.cat([top, bottom], -2))
    return block.narrow(-2, 0, n).narrow(-1, n, n)


FORMULAS = {
    "linalg_lu_factor_ex": F(_lu_factor_ex, save=("result",)),
    "linalg_lu_solve": F(_lu_solve, save=("LU", "pivots", "result")),
    "linalg_cholesky_ex": F(_cholesky_ex, save=("result",)),
    "cholesky_inverse": F(_cholesky_inverse, save=("input", "result")),
    "cholesky_solve": F(_cholesky_solve, save=("input", "input2", "result")),
    "linalg_solve_triangular": F(_solve_triangular_formula, save=("input", "result")),
    "linalg_qr": F(_qr, save=("A", "result")),
    "linalg_householder_product": F(_householder_product, save=("input", "tau")),
    "_linalg_svd": F(_svd, save=("result",)),
    "_linalg_eigh": F(_eigh, save=("result",)),
    "linalg_pinv": F(_pinv, save=("input", "result")),
    "linalg_lstsq": F(_lstsq, save=("input", "b", "result")),
    "linalg_det": F(_det, save=("A", "result")),
    "linalg_matrix_exp": F(_matrix_exp, save=("input",)),
    **EIG_FORMULAS,
}
