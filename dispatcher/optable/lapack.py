"""The LAPACK-backed primitives of ember.linalg: the ops a backend implements with a solver
library (LAPACK on the CPU, cuSOLVER on CUDA). Every other linalg op decomposes into these and the
matrix products. Rows carry PyTorch's aten names; the public names live in ember.linalg.
"""

from __future__ import annotations

from ember import _dtype as dt

from ..kinds import lapack as run
from ..kinds.matrices import DTYPES
from ..opdef import BY_KIND, Kind, OpDef
from . import linalg_reference as ref
from .linalg_rows import OUT_RULES

# Factorizations compare with float64 references: a float32 LAPACK differs by a few thousand ulps
# on the well-conditioned samples (condition numbers up to ~100).
TOLERANCES = {dt.float32: (1e-4, 1e-4)}

# Singular vectors and eigenvectors are defined up to sign: output -> the dim each vector runs
# along (U's columns, Vh's rows), for the tests.
SVD_SIGNS = {0: -2, 2: -1}
EIGH_SIGNS = {1: -2}

LAYOUT = (
    "matrices as [B, cols, rows] tensors with contiguous last two dims (column-major, as LAPACK); "
    "outputs first, written in place"
)


def _row(
    schema, runner, reference, display, args, samples, differentiable=True, old=False, signs=None
):
    return OpDef(
        schema,
        Kind.LINALG,
        reference,
        dtypes=DTYPES,
        differentiable=differentiable,
        runner=runner,
        function=old,  # old: also PyTorch's top-level name and Tensor method (torch.geqrf)
        method=old,
        kernel_args=f"{args}; {LAYOUT}",
        samples=samples,
        tolerances=TOLERANCES,
        attrs={"display": display, **({"signs": signs} if signs else {})},
        out=OUT_RULES.get(schema.partition("(")[0], BY_KIND),
    )


ROWS = [
    _row(
        "linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) "
        "-> (Tensor LU, Tensor pivots, Tensor info)",
        run.lu_factor_ex,
        ref.lu_factor_ex,
        "torch.linalg.lu_factor_ex",
        "(lu, pivots int32[B, k], info int32[B]): getrf",
        "lu_factor",
    ),
    _row(
        "linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
        "bool adjoint=False) -> Tensor",
        run.lu_solve,
        ref.lu_solve,
        "torch.linalg.lu_solve",
        "(x, lu, pivots, trans 0/1/2 = N/T/C): getrs",
        "lu_solve",
    ),
    _row(
        "linalg_cholesky_ex(Tensor input, *, bool upper=False, bool check_errors=False) "
        "-> (Tensor L, Tensor info)",
        run.cholesky_ex,
        ref.cholesky_ex,
        "linalg.cholesky",
        "(factor, info, upper): potrf, the other triangle zeroed",
        "positive_definite",
    ),
    _row(
        "linalg_solve_triangular(Tensor input, Tensor B, *, bool upper, bool left=True, "
        "bool unitriangular=False) -> Tensor",
        run.solve_triangular,
        ref.solve_triangular,
        "linalg.solve_triangular",
        "(x, a, upper, left, unitriangular): trsm; a row-major when its last stride is not 1",
        "solve_triangular",
    ),
    _row(
        "geqrf(Tensor input) -> (Tensor a, Tensor tau)",
        run.geqrf,
        ref.geqrf,
        "torch.geqrf",
        "(a, tau): geqrf",
        "rectangular",
        differentiable=False,
        old=True,
    ),
    _row(
        "linalg_householder_product(Tensor input, Tensor tau) -> Tensor",
        run.householder_product,
        ref.householder_product,
        "torch.linalg.householder_product",
        "(q, tau): orgqr",
        "householder",
    ),
    _row(
        "_linalg_svd(Tensor A, bool full_matrices=False, bool compute_uv=True, *, "
        "str? driver=None) -> (Tensor U, Tensor S, Tensor Vh)",
        run.svd,
        ref.svd,
        "linalg.svd",
        "(u, s, vh, a, job 'A'/'S'/'N') -> host info: gesdd on a scratch copy a",
        "svd",
        signs=SVD_SIGNS,
    ),
    _row(
        '_linalg_eigh(Tensor A, str UPLO="L", bool compute_v=True) '
        "-> (Tensor eigenvalues, Tensor eigenvectors)",
        run.eigh,
        ref.eigh,
        "linalg.eigh",
        "(w, v, upper, vectors) -> host info: syevd",
        "symmetric",
        signs=EIGH_SIGNS,
    ),
    _row(
        "linalg_lstsq(Tensor input, Tensor b, float? rcond=None, *, str? driver=None) "
        "-> (Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)",
        run.lstsq,
        ref.lstsq,
        "torch.linalg.lstsq",
        "(x, rank int64, sv, a, driver, rcond) -> host info: gels/gelsy/gelsd/gelss; x holds b "
        "padded to max(m, n) rows",
        "lstsq",
    ),
    _row(
        "linalg_ldl_factor_ex(Tensor input, *, bool hermitian=False, bool check_errors=False) "
        "-> (Tensor LD, Tensor pivots, Tensor info)",
        run.ldl_factor_ex,
        ref.ldl_factor_ex,
        "torch.linalg.ldl_factor_ex",
        "(ld, pivots int32, info, hermitian): sytrf ('L')",
        "symmetric",
        differentiable=False,
    ),
    _row(
        "linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> Tensor",
        run.ldl_solve,
        ref.ldl_solve,
        "torch.linalg.ldl_solve",
        "(x, ld, pivots, hermitian): sytrs",
        "ldl_solve",
        differentiable=False,
    ),
]
