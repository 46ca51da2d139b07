"""The matrix exponential: scaling and squaring with Pade approximants (Higham, "The scaling and
squaring method for the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005;
the algorithm of scipy.linalg.expm), in matmuls and one solve per call.

Its gradient is its own formula (autograd/linalg_formulas.py): the exponential of a block matrix,
as in PyTorch, rather than the derivative of this algorithm.
"""

# ruff: noqa: N803, N806 - matrices keep their mathematical names (A, U, V)
from __future__ import annotations

import math

import ember
from ember import _dtype as dt

from ..kinds._common import OPS
from ..kinds.matrices import check_matrix
from . import linalg_reference as ref
from .linalg_rows import composite

# Pade coefficients b_0..b_m of the [m/m] approximant of exp.
PADE = {
    3: (120.0, 60.0, 12.0, 1.0),
    5: (30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0),
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    9: (17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0),
}  # fmt: skip
# The largest 1-norm for which degree m is accurate to the unit roundoff (Higham 2005, table 2.3
# for double; its single-precision values stop at m = 7).
THETA = {
    dt.float64: ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1),
                    (7, 9.504178996162932e-1), (9, 2.097847961257068e0),
                    (13, 5.371920351148152e0)),
    dt.float32: ((3, 4.258730016922831e-1), (5, 1.880152677804762e0),
                    (7, 3.925724783138660e0)),
}  # fmt: skip


def _pade(A, m: int):
    """exp(A) ~ (V - U)^-1 (V + U), U the odd and V the even part of the degree-m numerator."""
    b = PADE[m]
    eye = ember.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    A2 = A @ A
    if m == 13:
        A4 = A2 @ A2
        A6 = A4 @ A2
        inner_u = A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2)
        U = A @ (inner_u + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
        inner_v = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2)
        V = inner_v + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    else:
        odd, even, power = b[1] * eye, b[0] * eye, eye
        for k in range(1, m // 2 + 1):
            power = A2 if k == 1 else power @ A2
            odd = odd + b[2 * k + 1] * power
            even = even + b[2 * k] * power
        U, V = A @ odd, even
    return OPS["linalg_solve"](V - U, V + U, True)


def _matrix_exp(A):
    check_matrix("linalg.matrix_exp", A, square=True)
    if A.numel() == 0:
        return A.clone()
    if A.shape[-1] == 1:
        return A.exp()
    if A.dtype in dt.FLOAT8:  # PyTorch's first kernel on it, the 1-norm's sum, refuses float8
        raise NotImplementedError(f"\"sum_cpu\" not implemented for '{dt.SCALAR_NAMES[A.dtype]}'")
    thetas = THETA[A.dtype.to_real()]  # a complex matrix: its parts' precision
    # One degree and scaling for the whole batch, chosen by its largest 1-norm.
    norm = float(A.abs().sum(-2).amax())
    for m, theta in thetas:
        if norm <= theta:
            return _pade(A, m)
    m, theta = thetas[-1]
    s = max(0, math.ceil(math.log2(norm / theta))) if math.isfinite(norm) else 0
    X = _pade(A / 2.0**s, m)
    for _ in range(s):
        X = X @ X
    return X


def _matrix_exp_old(A):
    return OPS["linalg_matrix_exp"](A)  # the same op, so the same formula


ROWS = [
    composite("linalg_matrix_exp(Tensor input) -> Tensor", _matrix_exp, ref.matrix_exp,
              "matrix_exp"),
    composite("matrix_exp(Tensor input) -> Tensor", _matrix_exp_old, ref.matrix_exp, "matrix_exp",
              old=True, display="linalg.matrix_exp"),
]  # fmt: skip
