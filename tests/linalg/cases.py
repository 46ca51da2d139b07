"""ember.linalg against torch.linalg: one record per call, run by test_torch.py (values, result
types, gradients) and test_gradcheck.py (finite differences in float64).

A record's ``fn(lib, *tensors)`` is written once for both libraries (ember mirrors torch's API);
outputs defined only up to sign (singular vectors, eigenvectors) are compared through sign-free
expressions of them. ``inputs(rng)`` gives float64 numpy arrays: well-conditioned (condition
numbers ~10) so float32 agrees with torch to ~1e-5.
"""

# ruff: noqa: N803 - records name matrices as PyTorch does (A, B) and the library L
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    inputs: Callable
    grad: bool = True  # compare gradients with torch's and gradcheck in float64
    gradgrad: bool = False  # also gradgradcheck (one small case per formula: they are slow)
    torch_grad: bool = True  # torch can differentiate it (its cond modifies a saved inverse)
    int_inputs: tuple = ()  # indices of inputs that are integer tensors (pivots)

    def __repr__(self) -> str:
        return self.name


# ---- inputs --------------------------------------------------------------------------------------


def well_conditioned(*shape):
    def make(rng):
        a = rng.uniform(-1, 1, shape)
        return a + shape[-1] * np.eye(shape[-1]) if shape[-1] == shape[-2] else a

    return make


def full_rank(*shape):
    def make(rng):
        m, n = shape[-2:]
        k = min(m, n)
        q1 = np.linalg.qr(rng.normal(size=(*shape[:-2], m, m)))[0][..., :, :k]
        q2 = np.linalg.qr(rng.normal(size=(*shape[:-2], n, n)))[0][..., :k, :]
        return (q1 * rng.uniform(1, 3, (*shape[:-2], k))[..., None, :]) @ q2

    return make


def spd(*shape):
    def make(rng):
        a = rng.uniform(-1, 1, shape)
        return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])

    return make


def symmetric(*shape):
    """Symmetric with eigenvalues at least 1 apart (eigenvectors defined up to sign)."""

    def make(rng):
        q = np.linalg.qr(rng.normal(size=shape))[0]
        w = np.arange(shape[-1]) * 1.5 - 2 + rng.uniform(-0.2, 0.2, shape[:-1])
        return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)

    return make


def uniform(*shape):
    return lambda rng: rng.uniform(-1, 1, shape)


def inputs(*makers):
    return lambda rng: [make(rng) for make in makers]


# ---- sign-free views of decompositions -----------------------------------------------------------


def svd_parts(r):
    """S, and U diag(S) Vh (the product is sign-free): svd's differentiable content."""
    return r.S, (r.U[..., :, : r.S.shape[-1]] * r.S.unsqueeze(-2)) @ r.Vh[..., : r.S.shape[-1], :]


def eigh_parts(r):
    """Eigenvalues and V diag(w^2) V^H (sign-free)."""
    w, v = r
    return w, (v * (w * w).unsqueeze(-2)) @ v.mH


def qr_parts(r):
    return r.Q, r.R


def sym(A):
    """(A + A^H) / 2: the symmetric matrices the Cholesky and eigh gradients are defined on
    (PyTorch's formulas return symmetric gradients), the same values for symmetric inputs."""
    return (A + A.mT) / 2


def _lu_factor(L, A):
    return L.linalg.lu_factor(A)


CASES = [
    # ---- solves and inverses
    Case("inv", lambda L, A: L.linalg.inv(A), inputs(well_conditioned(2, 4, 4))),
    Case("inv_ex", lambda L, A: L.linalg.inv_ex(A), inputs(well_conditioned(3, 3)), gradgrad=True),
    Case("solve", lambda L, A, B: L.linalg.solve(A, B),
         inputs(well_conditioned(2, 4, 4), uniform(2, 4, 3))),
    Case("solve vector", lambda L, A, B: L.linalg.solve(A, B),
         inputs(well_conditioned(2, 3, 3), uniform(3))),
    Case("solve broadcast", lambda L, A, B: L.linalg.solve(A, B),
         inputs(well_conditioned(2, 1, 3, 3), uniform(4, 3, 2))),
    Case("solve left=False", lambda L, A, B: L.linalg.solve(A, B, left=False),
         inputs(well_conditioned(3, 3), uniform(2, 3))),
    Case("solve_ex", lambda L, A, B: L.linalg.solve_ex(A, B),
         inputs(well_conditioned(3, 3), uniform(3, 2))),
    Case("det", lambda L, A: L.linalg.det(A), inputs(well_conditioned(3, 4, 4))),
    Case("slogdet", lambda L, A: L.linalg.slogdet(-A), inputs(well_conditioned(2, 3, 3))),
    Case("logdet", lambda L, A: L.logdet(A), inputs(spd(2, 3, 3))),
    Case("cholesky", lambda L, A: L.linalg.cholesky(sym(A)), inputs(spd(2, 4, 4))),
    Case("cholesky upper", lambda L, A: L.linalg.cholesky(sym(A), upper=True), inputs(spd(3, 3)),
         gradgrad=True),
    Case("cholesky_ex", lambda L, A: L.linalg.cholesky_ex(sym(A)), inputs(spd(2, 3, 3))),
    Case("lu_factor", _lu_factor, inputs(well_conditioned(2, 4, 4))),
    Case("lu_factor_ex wide", lambda L, A: L.linalg.lu_factor_ex(A), inputs(full_rank(3, 5)),
         gradgrad=True),
    Case("lu", lambda L, A: L.linalg.lu(A), inputs(well_conditioned(2, 3, 3))),
    Case("lu tall", lambda L, A: L.linalg.lu(A), inputs(full_rank(2, 5, 3)), gradgrad=True),
    Case("lu wide", lambda L, A: L.linalg.lu(A), inputs(full_rank(3, 5))),
    Case("lu_solve", lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B),
         inputs(well_conditioned(2, 3, 3), uniform(2, 3, 2))),
    Case("lu_solve adjoint", lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B,
                                                                 adjoint=True),
         inputs(well_conditioned(3, 3), uniform(3, 2)), gradgrad=True),
    Case("lu_solve left=False", lambda L, A, B: L.linalg.lu_solve(*L.linalg.lu_factor(A), B,
                                                                    left=False),
         inputs(well_conditioned(3, 3), uniform(2, 3))),
    Case("solve_triangular", lambda L, A, B: L.linalg.solve_triangular(A.triu(), B, upper=True),
         inputs(well_conditioned(2, 3, 3), uniform(2, 3, 2))),
    Case("solve_triangular right unit",
         lambda L, A, B: L.linalg.solve_triangular(A, B, upper=False, left=False,
                                                   unitriangular=True),
         inputs(well_conditioned(3, 3), uniform(2, 3)), gradgrad=True),
    Case("ldl_factor", lambda L, A: L.linalg.ldl_factor(A), inputs(symmetric(2, 4, 4)),
         grad=False),
    Case("ldl_solve", lambda L, A, B: L.linalg.ldl_solve(*L.linalg.ldl_factor(A), B),
         inputs(symmetric(3, 3), uniform(3, 2)), grad=False),
    Case("lstsq gelsy", lambda L, A, B: L.linalg.lstsq(A, B).solution,
         inputs(full_rank(2, 5, 3), uniform(2, 5, 2))),
    Case("lstsq gels", lambda L, A, B: L.linalg.lstsq(A, B, driver="gels")[:2],
         inputs(full_rank(5, 3), uniform(5, 2)), gradgrad=True),
    Case("lstsq gelsd", lambda L, A, B: L.linalg.lstsq(A, B, driver="gelsd"),
         inputs(full_rank(5, 3), uniform(5)), grad=False),
    Case("lstsq gelss wide", lambda L, A, B: L.linalg.lstsq(A, B, driver="gelss").solution,
         inputs(full_rank(3, 5), uniform(3, 2))),
    # ---- decompositions
    Case("qr", lambda L, A: qr_parts(L.linalg.qr(A)), inputs(full_rank(2, 5, 3))),
    Case("qr wide", lambda L, A: qr_parts(L.linalg.qr(A)), inputs(full_rank(3, 5)), gradgrad=True),
    Case("qr complete", lambda L, A: qr_parts(L.linalg.qr(A, mode="complete")),
         inputs(full_rank(3, 3))),
    Case("qr r", lambda L, A: L.linalg.qr(A, mode="r").R, inputs(full_rank(4, 3)), grad=False),
    Case("svd", lambda L, A: svd_parts(L.linalg.svd(A, full_matrices=False)),
         inputs(full_rank(2, 5, 3))),
    Case("svd full", lambda L, A: svd_parts(L.linalg.svd(A)), inputs(full_rank(3, 4)),
         gradgrad=True),
    Case("svdvals", lambda L, A: L.linalg.svdvals(A), inputs(full_rank(2, 3, 4))),
    Case("eigh", lambda L, A: eigh_parts(L.linalg.eigh(sym(A))), inputs(symmetric(2, 4, 4))),
    Case("eigh upper", lambda L, A: eigh_parts(L.linalg.eigh(sym(A), UPLO="U")),
         inputs(symmetric(3, 3)), gradgrad=True),
    Case("eigvalsh", lambda L, A: L.linalg.eigvalsh(sym(A)), inputs(symmetric(2, 3, 3))),
    Case("householder_product", lambda L, A, tau: L.linalg.householder_product(A, tau),
         inputs(uniform(2, 4, 3), uniform(2, 2))),
    # ---- built on them
    Case("pinv", lambda L, A: L.linalg.pinv(A), inputs(full_rank(2, 4, 3))),
    Case("pinv hermitian", lambda L, A: L.linalg.pinv(sym(A), hermitian=True),
         inputs(symmetric(3, 3)), gradgrad=True),
    Case("pinv rtol", lambda L, A: L.linalg.pinv(A, rtol=0.5), inputs(full_rank(3, 4)),
         grad=False),
    Case("matrix_rank", lambda L, A: L.linalg.matrix_rank(A, atol=1.5), inputs(full_rank(2, 4, 3)),
         grad=False),
    Case("cond", lambda L, A: L.linalg.cond(A), inputs(well_conditioned(2, 3, 3)), gradgrad=True),
    Case("cond fro", lambda L, A: L.linalg.cond(A, "fro"), inputs(well_conditioned(3, 3)),
         torch_grad=False),
    Case("cond -inf", lambda L, A: L.linalg.cond(A, -math.inf), inputs(well_conditioned(3, 3)),
         torch_grad=False),
    Case("matrix_exp", lambda L, A: L.linalg.matrix_exp(A), inputs(uniform(2, 3, 3))),
    Case("matrix_exp scaled", lambda L, A: L.linalg.matrix_exp(4 * A), inputs(uniform(3, 3)),
         gradgrad=True),
    Case("matrix_power", lambda L, A: L.linalg.matrix_power(A, 3), inputs(uniform(2, 3, 3))),
    Case("matrix_power -2", lambda L, A: L.linalg.matrix_power(A, -2),
         inputs(well_conditioned(3, 3))),
    Case("tensorinv", lambda L, A: L.linalg.tensorinv(A.reshape(2, 3, 6)),
         inputs(well_conditioned(6, 6))),
    Case("tensorsolve", lambda L, A, B: L.linalg.tensorsolve(A.reshape(6, 2, 3), B),
         inputs(well_conditioned(6, 6), uniform(6))),
    # ---- norms and products
    Case("vector_norm", lambda L, x: L.linalg.vector_norm(x, 3, dim=(0, 2)),
         inputs(uniform(2, 3, 4))),
    Case("vector_norm inf", lambda L, x: L.linalg.vector_norm(x, math.inf), inputs(uniform(3, 4))),
    Case("matrix_norm fro", lambda L, A: L.linalg.matrix_norm(A), inputs(uniform(2, 3, 4))),
    Case("matrix_norm nuc", lambda L, A: L.linalg.matrix_norm(A, "nuc", keepdim=True),
         inputs(full_rank(2, 3, 4))),
    Case("matrix_norm 2", lambda L, A: L.linalg.matrix_norm(A, 2, dim=(0, 2)),
         inputs(full_rank(3, 2, 4))),
    Case("matrix_norm -1", lambda L, A: L.linalg.matrix_norm(A, -1), inputs(uniform(2, 3, 4))),
    Case("norm", lambda L, A: L.linalg.norm(A), inputs(uniform(2, 3, 4))),
    Case("norm ord", lambda L, A: L.linalg.norm(A, math.inf), inputs(uniform(3, 4))),
    Case("norm dim", lambda L, A: L.linalg.norm(A, 1, dim=1), inputs(uniform(3, 4))),
    Case("cross", lambda L, a, b: L.linalg.cross(a, b), inputs(uniform(4, 3), uniform(1, 3))),
    Case("vecdot", lambda L, a, b: L.linalg.vecdot(a, b, dim=0),
         inputs(uniform(3, 4), uniform(3, 4))),
    Case("multi_dot", lambda L, a, b, c, d: L.linalg.multi_dot([a, b, c, d]),
         inputs(uniform(3), uniform(3, 5), uniform(5, 2), uniform(2, 4))),
    Case("vander", lambda L, x: L.linalg.vander(x, N=4), inputs(uniform(2, 3))),
    Case("diagonal", lambda L, A: L.linalg.diagonal(A, offset=1), inputs(uniform(2, 3, 4))),
    Case("matmul", lambda L, a, b: L.linalg.matmul(a, b), inputs(uniform(2, 3, 4), uniform(4, 2))),
    # ---- the old top-level names
    Case("torch.inverse", lambda L, A: L.inverse(A), inputs(well_conditioned(3, 3)), gradgrad=True),
    Case("Tensor.det", lambda L, A: A.det(), inputs(well_conditioned(2, 3, 3))),
    Case("torch.slogdet", lambda L, A: L.slogdet(A), inputs(well_conditioned(3, 3))),
    Case("torch.svd", lambda L, A: (lambda r: (r.S, (r.U * r.S.unsqueeze(-2)) @ r.V.mT))(
        L.svd(A)), inputs(full_rank(4, 3))),
    Case("torch.svd compute_uv=False", lambda L, A: L.svd(A, compute_uv=False),
         inputs(full_rank(4, 3)), grad=False),
    Case("torch.qr", lambda L, A: tuple(L.qr(A)), inputs(full_rank(4, 3))),
    Case("Tensor.cholesky", lambda L, A: sym(A).cholesky(), inputs(spd(3, 3))),
    Case("cholesky_solve", lambda L, B, A: L.cholesky_solve(B, L.linalg.cholesky(sym(A))),
         inputs(uniform(2, 3, 2), spd(3, 3))),
    Case("cholesky_solve upper", lambda L, B, A: L.cholesky_solve(
        B, L.linalg.cholesky(sym(A), upper=True), upper=True), inputs(uniform(3, 2), spd(3, 3))),
    Case("cholesky_inverse", lambda L, A: L.cholesky_inverse(L.linalg.cholesky(sym(A))),
         inputs(spd(2, 3, 3))),
    Case("lu_unpack", lambda L, A: L.lu_unpack(*L.linalg.lu_factor(A)),
         inputs(well_conditioned(2, 3, 3))),
    Case("torch.lu", lambda L, A: L.lu(A), inputs(well_conditioned(3, 3))),
    Case("torch.lu get_infos", lambda L, A: A.lu(get_infos=True), inputs(well_conditioned(3, 3))),
    Case("torch.lu_solve", lambda L, B, A: L.lu_solve(B, *L.linalg.lu_factor(A)),
         inputs(uniform(3, 2), well_conditioned(3, 3))),
    Case("pinverse", lambda L, A: L.pinverse(A), inputs(full_rank(3, 4))),
    Case("Tensor.matrix_power", lambda L, A: A.matrix_power(2), inputs(uniform(3, 3))),
    Case("torch.matrix_exp", lambda L, A: L.matrix_exp(A), inputs(uniform(3, 3))),
    Case("torch.cross", lambda L, a, b: L.cross(a, b, dim=0), inputs(uniform(3, 2),
                                                                      uniform(3, 2))),
    Case("tensordot", lambda L, a, b: L.tensordot(a, b, dims=([1, 0], [0, 2])),
         inputs(uniform(2, 3, 4), uniform(3, 5, 2))),
    Case("tensordot int", lambda L, a, b: L.tensordot(a, b, 1), inputs(uniform(2, 3),
                                                                         uniform(3, 4))),
    Case("kron", lambda L, a, b: L.kron(a, b), inputs(uniform(2, 3), uniform(2, 1, 2))),
    Case("Tensor.kron", lambda L, a, b: a.kron(b), inputs(uniform(3), uniform(2, 2))),
    Case("trace", lambda L, A: L.trace(A), inputs(uniform(3, 4))),
    Case("triangular_solve", lambda L, B, A: L.triangular_solve(B, A.triu()),
         inputs(uniform(2, 3, 2), well_conditioned(3, 3))),
    Case("triangular_solve transpose", lambda L, B, A: L.triangular_solve(
        B, A.tril(), upper=False, transpose=True), inputs(uniform(3, 2), well_conditioned(3, 3))),
    Case("geqrf", lambda L, A: L.geqrf(A), inputs(full_rank(4, 3)), grad=False),
    Case("orgqr", lambda L, A, tau: L.orgqr(A, tau), inputs(uniform(4, 3), uniform(3)),
         gradgrad=True),
]  # fmt: skip
