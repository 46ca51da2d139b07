"""Named tuples returned by ops with several results, like ``torch.return_types``."""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple


class ValuesIndices(NamedTuple):
    """``(values, indices)``: returned by max, min, sort, topk, kthvalue, mode, median."""

    values: object
    indices: object


max = min = sort = topk = kthvalue = mode = median = cummax = cummin = ValuesIndices


class Frexp(NamedTuple):
    """``(mantissa, exponent)``: returned by frexp."""

    mantissa: object
    exponent: object


class Aminmax(NamedTuple):
    """``(min, max)``: returned by aminmax."""

    min: object
    max: object


frexp = Frexp
aminmax = Aminmax


def _linalg(name: str, fields: str):
    """A ``torch.return_types``-style named tuple of the linalg ops."""
    made = namedtuple(name, fields)
    made.__module__ = "ember.return_types"
    return made


linalg_slogdet = _linalg("linalg_slogdet", "sign logabsdet")
slogdet = _linalg("slogdet", "sign logabsdet")
linalg_cholesky_ex = _linalg("linalg_cholesky_ex", "L info")
linalg_inv_ex = _linalg("linalg_inv_ex", "inverse info")
linalg_solve_ex = _linalg("linalg_solve_ex", "result info")
linalg_lu_factor = _linalg("linalg_lu_factor", "LU pivots")
linalg_lu_factor_ex = _linalg("linalg_lu_factor_ex", "LU pivots info")
linalg_lu = _linalg("linalg_lu", "P L U")
lu_unpack = _linalg("lu_unpack", "P L U")
linalg_qr = _linalg("linalg_qr", "Q R")
qr = _linalg("qr", "Q R")
geqrf = _linalg("geqrf", "a tau")
linalg_svd = _linalg("linalg_svd", "U S Vh")
svd = _linalg("svd", "U S V")
linalg_eigh = _linalg("linalg_eigh", "eigenvalues eigenvectors")
linalg_eig = _linalg("linalg_eig", "eigenvalues eigenvectors")
linalg_lstsq = _linalg("linalg_lstsq", "solution residuals rank singular_values")
linalg_ldl_factor = _linalg("linalg_ldl_factor", "LD pivots")
linalg_ldl_factor_ex = _linalg("linalg_ldl_factor_ex", "LD pivots info")
triangular_solve = _linalg("triangular_solve", "solution cloned_coefficient")
