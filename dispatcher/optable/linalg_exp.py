"""The matrix exponential as PyTorch computes it: optimized Taylor polynomials of degree 1, 2,
4, 8, 12 or 18 chosen by a lone matrix's 1-norm (degree 18 for every matrix of a batch of
several, as PyTorch), and for the largest norms scaling and squaring of degree 18 (Bader, Blanes
and Casas, "Computing the matrix exponential with an optimized Taylor polynomial
approximation", Mathematics 7(12), 1174, 2019). Matmuls only, no solve; the same degree and
scaling as PyTorch's for every matrix, so the same rounding up to the matmuls'. (The Pade
method this replaces left a float32 result of 1e5 two ulps from PyTorch's on an H200, which the
tests could not tell from a bug.)

Its gradient is its own formula (autograd/linalg_formulas.py): the exponential of a block matrix,
as in PyTorch, rather than the derivative of this algorithm.
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, B)
from __future__ import annotations

import math

import ember
from ember import _dtype as dt

from ..kinds._common import OPS
from ..kinds.matrices import check_matrix
from . import linalg_reference as ref
from .linalg_rows import composite

DEGREES = (1, 2, 4, 8, 12, 18)
# The largest 1-norm each degree is accurate for, in the precision of a matrix's real parts
# (Bader et al. 2019, table 1 and table 3); past the last one, degree 18 of A / 2**s.
THETAS = {
    dt.float32: (1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                 5.800524627688768e-01, 1.461661507209034e00, 3.010066362817634e00),
    dt.float64: (2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                 4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e00),
}  # fmt: skip

# Degree 8: A4 = A2 (x1 A + x2 A2), A8 = (x3 A2 + A4)(x4 I + x5 A + x6 A2 + x7 A4),
# T8 = I + A + y2 A2 + A8 (Bader et al. 2019, section 4.1).
_R = math.sqrt(177.0)
X3 = 2.0 / 3.0
X1, X2 = X3 * (1.0 + _R) / 88.0, X3 * (1.0 + _R) / 352.0
X4, X5 = (-271.0 + 29.0 * _R) / (315.0 * X3), (-11.0 + 11.0 * _R) / (1260.0 * X3)
X6, X7 = (-99.0 + 11.0 * _R) / (5040.0 * X3), (89.0 - _R) / (5040.0 * X3)
Y2 = (857.0 - 58.0 * _R) / 630.0
# Degrees 12 and 18: B_i = sum_j b[i][j] P_j over the powers P = (I, A, A2, A3) and
# (I, A, A2, A3, A6) (Bader et al. 2019, tables 2 and 4).
B12 = (
    (9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740),
    (5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031,
     0.01108844528519167989),
    (0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968,
     0.00610700528898058230),
    (-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079,
     -0.00675951846863086359),
)  # fmt: skip
B18 = (
    (0.0, -1.00365581030144618291e-01, -8.02924648241156932449e-03,
     -8.92138498045729985177e-04, 0.0),
    (0.0, 3.97849749499645077844e-01, 1.36783778460411720168e00, 4.98289622525382669416e-01,
     -6.37898194594723280150e-04),
    (-1.09676396052962061844e01, 1.68015813878906206114e00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05),
    (-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05),
    (0.0, 0.0, -9.23364619367118555360e-02, -1.69364939002081722752e-02,
     -1.40086798182036094347e-05),
)  # fmt: skip


def _combine(coefficients, powers):
    """sum_j c_j P_j over the nonzero coefficients (no ``0 +`` kernel, as ``sum()`` would add)."""
    terms = [c * P for c, P in zip(coefficients, powers) if c]
    out = terms[0]
    for term in terms[1:]:
        out = out + term
    return out


def _taylor(A, degree: int):
    """The optimized degree-``degree`` Taylor polynomial of exp at a batch of matrices."""
    eye = ember.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    if degree == 1:
        return eye + A
    A2 = A @ A
    if degree == 2:
        return eye + A + A2 / 2.0
    if degree == 4:
        return eye + A + A2 @ (eye / 2.0 + A / 6.0 + A2 / 24.0)
    if degree == 8:
        A4 = A2 @ (X1 * A + X2 * A2)
        A8 = (X3 * A2 + A4) @ (X4 * eye + X5 * A + X6 * A2 + X7 * A4)
        return eye + A + Y2 * A2 + A8
    powers = [eye, A, A2, A2 @ A]
    if degree == 12:
        B = [_combine(row, powers) for row in B12]
        B2 = B[2] + B[3] @ B[3]
        return B[0] + (B[1] + B2) @ B2
    powers.append(powers[3] @ powers[3])
    B = [_combine(row, powers) for row in B18]
    A9 = B[3] + B[0] @ B[4]
    return B[1] + (B[2] + A9) @ A9


def _plan(norm: float, thetas, batched: bool) -> tuple[int, int]:
    """(degree, squarings) for a matrix of 1-norm ``norm``, as PyTorch picks them: by the
    norm's interval for a lone matrix, degree 18 for every matrix of a batch of several."""
    if not batched:
        for degree, theta in zip(DEGREES[:4], thetas[:4]):
            if norm <= theta:
                return degree, 0
        if norm < thetas[4]:
            return 12, 0
    if not math.isfinite(norm):  # inf or NaN: no scaling makes it finite; the result is not
        return 18, 0
    return 18, max(0, math.ceil(math.log2(norm / thetas[5])))


def _scaled_taylor(A, degree: int, squarings: int):
    X = _taylor(A / 2.0**squarings if squarings else A, degree)
    for _ in range(squarings):
        X = X @ X
    return X


def _matrix_exp(A):
    check_matrix("linalg.matrix_exp", A, square=True)
    if A.numel() == 0:
        return A.clone()
    n = A.shape[-1]
    if n == 1:
        return A.exp()
    if A.dtype in dt.FLOAT8:  # PyTorch's first kernel on it, the 1-norm's sum, refuses float8
        raise NotImplementedError(f"\"sum_cpu\" not implemented for '{dt.SCALAR_NAMES[A.dtype]}'")
    thetas = THETAS[A.dtype.to_real()]  # a complex matrix: its parts' precision
    flat = A.reshape(-1, n, n)
    # one host read of every matrix's 1-norm (on a device too): the plan is the host's
    norms = flat.abs().sum(-2).amax(-1).tolist()
    groups: dict[tuple[int, int], list[int]] = {}
    for i, norm in enumerate(norms):
        groups.setdefault(_plan(norm, thetas, len(norms) > 1), []).append(i)
    if len(groups) == 1:
        return _scaled_taylor(flat, *next(iter(groups))).reshape(A.shape)
    out = ember.empty_like(flat)
    for plan, members in groups.items():
        index = ember.tensor(members, dtype=ember.int64, device=A.device)
        out[index] = _scaled_taylor(flat[index], *plan)
    return out.reshape(A.shape)


def _matrix_exp_old(A):
    return OPS["linalg_matrix_exp"](A)  # the same op, so the same formula


ROWS = [
    composite("linalg_matrix_exp(Tensor input) -> Tensor", _matrix_exp, ref.matrix_exp,
              "matrix_exp"),
    composite("matrix_exp(Tensor input) -> Tensor", _matrix_exp_old, ref.matrix_exp, "matrix_exp",
              old=True, display="linalg.matrix_exp"),
]  # fmt: skip
