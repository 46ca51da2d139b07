"""ember.linalg: PyTorch's ``torch.linalg``, batched over leading dims.

Every function is an op-table row (named as in ATen: ``linalg_inv`` is ``ember.linalg.inv``); the
functions below are generated from those rows, with the rows' PyTorch signatures. The LAPACK-backed
primitives are in ``ember.dispatcher.optable.lapack``; the CPU runs OpenBLAS's LAPACK through
cffi, CUDA runs cuSOLVER, and the ``xpu`` backend runs them through the declared CPU fallback
(``python -m ember.plugins`` counts those calls).

Complex dtypes (``eig``, ``eigvals``, complex inputs everywhere) come with ember's complex dtypes.

Example:
    >>> A = ember.randn(4, 3, 3, dtype=ember.float64)
    >>> X = ember.linalg.solve(A, ember.randn(4, 3, 2, dtype=ember.float64))
    >>> ember.linalg.inv(A).shape
    ember.Size([4, 3, 3])
"""

from __future__ import annotations

from ember._namespace import export_rows as _export_rows
from ember.dispatcher.kinds.matrices import LinAlgError

from ._frontends import (
    TENSOR_METHODS,
    TOP_LEVEL,
    eig,
    eigvals,
    ldl_factor,
    lstsq,
    matrix_rank,
    pinv,
)

# ember.linalg.<name> -> the op-table row it calls.
ROWS = {
    "cholesky": "linalg_cholesky",
    "cholesky_ex": "linalg_cholesky_ex",
    "cond": "linalg_cond",
    "cross": "linalg_cross",
    "det": "linalg_det",
    "diagonal": "linalg_diagonal",
    "eigh": "linalg_eigh",
    "eigvalsh": "linalg_eigvalsh",
    "householder_product": "linalg_householder_product",
    "inv": "linalg_inv",
    "inv_ex": "linalg_inv_ex",
    "ldl_factor_ex": "linalg_ldl_factor_ex",
    "ldl_solve": "linalg_ldl_solve",
    "lu": "linalg_lu",
    "lu_factor": "linalg_lu_factor",
    "lu_factor_ex": "linalg_lu_factor_ex",
    "lu_solve": "linalg_lu_solve",
    "matmul": "matmul",
    "matrix_exp": "linalg_matrix_exp",
    "matrix_norm": "linalg_matrix_norm",
    "matrix_power": "linalg_matrix_power",
    "multi_dot": "linalg_multi_dot",
    "norm": "linalg_norm",
    "qr": "linalg_qr",
    "slogdet": "linalg_slogdet",
    "solve": "linalg_solve",
    "solve_ex": "linalg_solve_ex",
    "solve_triangular": "linalg_solve_triangular",
    "svd": "linalg_svd",
    "svdvals": "linalg_svdvals",
    "tensorinv": "linalg_tensorinv",
    "tensorsolve": "linalg_tensorsolve",
    "vander": "linalg_vander",
    "vecdot": "linalg_vecdot",
    "vector_norm": "linalg_vector_norm",
}


_export_rows(ROWS, "ember.linalg", globals())

__all__ = sorted(
    [*ROWS, "LinAlgError", "eig", "eigvals", "ldl_factor", "lstsq", "matrix_rank", "pinv"]
)
