"""ormqr of PyTorch's core surface: a product with the Q of a QR factorisation given as
geqrf's Householder reflectors, through the existing machinery (LAPACK's orgqr via
linalg_householder_product builds the m x m Q, then a matmul), so no factorisation is written
here and autograd comes from householder_product's formula and the product's."""

# ruff: noqa: N803, N806 - matrices keep PyTorch's names (A, C, Q)
from __future__ import annotations

import numpy as np

import ember
from ember._dtype import SCALAR_NAMES

from ..kinds._common import OPS
from ..kinds.matrices import DTYPES
from . import linalg_reference as ref
from .linalg_rows import composite


def _check(A, tau, C, left: bool) -> None:
    """PyTorch's checks (BatchLinearAlgebra.cpp), in its words."""
    if A.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if C.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if C.shape[side] != A.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.ndim == 0 or tau.shape[-1] != min(C.shape[side], A.shape[-1]):
        raise RuntimeError(
            f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])"
        )
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(
            "torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {tau.ndim} and input.ndim is equal to {A.ndim}"
        )
    if A.ndim != C.ndim:
        raise RuntimeError(
            "torch.ormqr: Expected other to have the same number of dimensions as input, but "
            f"got other.ndim equal to {C.ndim} and input.ndim is equal to {A.ndim}"
        )
    if A.dtype not in DTYPES and not A.dtype.is_complex:  # PyTorch's CPU kernel has none
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for '{SCALAR_NAMES[A.dtype]}'")
    for other, name in ((tau, "tau"), (C, "other")):
        if other.dtype is not A.dtype:
            raise RuntimeError(
                f"torch.ormqr: Expected input and {name} to have the same dtype, but input has "
                f"dtype {A.dtype.name} and {name} has dtype {other.dtype.name}"
            )


def _full_q(A, tau):
    """The m x m Q = H_1 ... H_k: the reflectors padded (or cut) to m columns; orgqr ignores
    the columns past the k reflectors."""
    m, n = A.shape[-2:]
    if n >= m:
        reflectors = A.narrow(-1, 0, m)
    else:
        pad = ember.zeros(*A.shape[:-1], m - n, dtype=A.dtype, device=A.device)
        reflectors = ember.cat([A, pad], -1)
    return OPS["linalg_householder_product"](reflectors, tau)


def _ormqr(A, tau, C, left=True, transpose=False):
    _check(A, tau, C, left)
    Q = _full_q(A, tau)
    if transpose:
        Q = Q.mH
    return ember.matmul(Q, C) if left else ember.matmul(C, Q)


def _np_ormqr(a, tau, c, left=True, transpose=False):
    m, n = a.shape[-2:]
    cols = a[..., :, :m] if n >= m else np.concatenate([a, np.zeros((*a.shape[:-1], m - n))], -1)
    q = ref.householder_product(cols, tau)
    if transpose:
        q = np.swapaxes(q, -1, -2).conj()
    return q @ c if left else c @ q


ROWS = [
    composite(
        "ormqr(Tensor input, Tensor input2, Tensor input3, bool left=True, bool transpose=False) "
        "-> Tensor",
        _ormqr,
        _np_ormqr,
        "ormqr",
        old=True,
        display="ormqr",
        notes="input and input2: geqrf's reflectors and tau; input3: the matrix Q multiplies",
    ),
]
