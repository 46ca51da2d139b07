"""The gradient of ``_linalg_eig`` (ember.linalg.eig and eigvals): PyTorch's linalg_eig_backward
(torch/csrc/autograd/FunctionsManual.cpp), in ember ops, so it runs on every device and is itself
differentiable.

Eigenvectors are defined up to a complex phase each: a loss that depends on the phases has no
gradient, and PyTorch refuses it (the imaginary part of ``diag(V^H gV)`` is not ~0); so does this.
The one solve with V^H is complex: it runs as the real block system of twice the size, through
the real LAPACK rows (ember's linalg solves are real).
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, L, V), as in PyTorch
from __future__ import annotations

import ember as E

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter

_PHASE_DEPENDENT = (
    "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it "
    "is ill-defined."
)


def _conj_t(X):
    return E.conj(X.mT)


def complex_solve(A, B):
    """X with A X = B for complex A and B, as the real system
    [[Re A, -Im A], [Im A, Re A]] [Re X; Im X] = [Re B; Im B]."""
    Ar, Ai = E.real(A), E.imag(A)
    block = E.cat([E.cat([Ar, -Ai], -1), E.cat([Ai, Ar], -1)], -2)
    X = E.linalg.solve(block, E.cat([E.real(B), E.imag(B)], -2))
    n = A.shape[-1]
    return E.complex(X.narrow(-2, 0, n).contiguous(), X.narrow(-2, n, n).contiguous())


def _off_diagonal(gV, L, V):
    """PyTorch's projection of V^H gV onto the tangent space of GL(n, C) / (C^*)^n, divided
    by conj(L_j - L_i) off the diagonal."""
    VH = _conj_t(V)
    VhgV = VH @ gV
    diag = VhgV.diagonal(0, -2, -1)
    if not bool((E.abs(E.imag(diag)) <= 1e-2).all()):  # allclose(imag, 0, 1e-2, 1e-2)
        raise RuntimeError(_PHASE_DEPENDENT)
    projected = VhgV - VH @ (V * E.real(diag).unsqueeze(-2))
    Lc = E.conj(L)
    eye = E.eye(L.shape[-1], dtype=E.real(L).dtype, device=L.device)  # real: a mask too
    return projected / (Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye), eye


def _eig(ctx, gL, gV):
    A = ctx.A
    L, V = ctx.result
    VH = _conj_t(V)
    if gV is None:
        gA = complex_solve(VH, gL.unsqueeze(-1) * VH)
    else:
        inner, eye = _off_diagonal(gV, L, V)
        if gL is not None:  # the diagonal is gL's
            inner = inner * (1 - eye) + gL.unsqueeze(-1) * eye
        gA = complex_solve(VH, inner @ VH)
    return gA if A.dtype.is_complex else E.real(gA)


FORMULAS = {"_linalg_eig": F(_eig, save=("A", "result"))}
