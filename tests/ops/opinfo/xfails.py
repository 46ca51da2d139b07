"""The one table of OpInfo records that do not pass yet, each with its reason.

Keys are record ids (``name`` or ``name.variant``, as the test ids show), optionally with
``@device`` for a failure on one device only; a ``name@device`` row of None says the record
passes on that device although its plain row fails elsewhere. The xfails are strict: a record
that starts to pass fails the run until its row is removed, so the table only shrinks. Each
reason names the area (core, nn, linalg, special, fft...) and what fails, as the record's run
reports it.
"""

from __future__ import annotations

SPARSE = "sparse layouts: ember tensors are strided"
JITERATOR = "torch.cuda.jiterator compiles CUDA source at run time: no ember counterpart"
PRIVATE = "a private PyTorch entry point (float8 scaled matmul, fused attention kernels)"

XFAILS = {
    "as_strided_scatter": (
        "core: PyTorch's input gradient of as_strided_scatter is wrong (its own OpInfo marks "
        "test_fn_grad an expected failure); ember's is the true derivative"
    ),
    "chalf": (
        "complex: ember has no complex32 (ComplexHalf) dtype: numpy, the complex CPU kernels' "
        "arithmetic, has no half-precision complex type to store or compute it"
    ),
    "jiterator_2inputs_2outputs": JITERATOR,
    "jiterator_4inputs_with_extra_args": JITERATOR,
    "jiterator_binary": JITERATOR,
    "jiterator_binary_return_by_ref": JITERATOR,
    "jiterator_unary": JITERATOR,
    "sparse.mm.reduce": SPARSE,
    "sparse.sampled_addmm": SPARSE,
    "to_sparse": SPARSE,
    "torch._scaled_mm_v2": PRIVATE,
}


def reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail on ``device``, or None when it must pass."""
    on_device = f"{record}@{device}"
    return XFAILS[on_device] if on_device in XFAILS else XFAILS.get(record)


# The records' complex128 runs (test_opinfo_complex): record id (optionally ``@device``) -> why
# it fails (failing samples of all, then the first failure's kind). Found when complex128 joined
# the suite (2026-11-27): strict, so the table only shrinks as complex kernels land.
COMPLEX_XFAILS = {
    "angle@xpu": "20/20 samples: angle calls isnan, which refuses complex128 off the CPU",
    "angle@ref": "20/20 samples: angle calls isnan, which refuses complex128 off the CPU",
    "addmm": "6/6 samples: addmm refuses complex128",
    "addmm.decomposed": "6/6 samples: addmm refuses complex128",
    "addmv": "6/6 samples: addmv refuses complex128",
    "addbmm": "12/12 samples: addbmm refuses complex128",
    "baddbmm": "13/13 samples: baddbmm refuses complex128",
    "dot": "2/2 samples: dot refuses complex128",
    "vdot": "2/2 samples: vdot refuses complex128",
    "mv": "1/1 samples: mv refuses complex128",
    "cholesky": "16/16 samples: no complex128 kernel: linalg_cholesky_ex",
    "cholesky_inverse": "12/12 samples: no complex128 kernel: linalg_solve_triangular",
    "cholesky_solve": "12/12 samples: no complex128 kernel: linalg_solve_triangular",
    "cross": "3/3 samples: RuntimeError: linalg.cross: not implemented for ComplexDouble tensors",
    "geqrf": "36/36 samples: no complex128 kernel: geqrf",
    "lu": "30/30 samples: no complex128 kernel: linalg_lu_factor_ex",
    "lu_solve": "27/27 samples: no complex128 kernel: linalg_lu_solve",
    "matrix_exp": "2/2 samples: KeyError: ember.complex128",
    "ormqr": (
        "144/144 samples: NotImplementedError: \"ormqr_cpu\" not implemented for 'ComplexDouble'"
    ),
    "qr": "36/36 samples: no complex128 kernel: geqrf",
    "triangular_solve": "16/16 samples: no complex128 kernel: linalg_solve_triangular",
    "einsum": "11/11 samples: einsum refuses complex128",
    "svd": "216/216 samples: wrong result dtype: complex128 where PyTorch gives float64",
    "svd_lowrank": "16/16 samples: no complex128 kernel: geqrf",
    "pca_lowrank": "16/16 samples: no complex128 kernel: geqrf",
    "pinverse": (
        "8/8 samples: RuntimeError: linalg.pinv(ComplexDouble{[5, 5]}): expected a tensor wi"
    ),
    "inner": "2/2 samples: inner refuses complex128",
    "tensordot": "3/3 samples: RuntimeError: tensordot: not implemented for ComplexDouble tensors",
    "logdet": "9/9 samples: no complex128 kernel: linalg_lu_factor_ex",
    "norm.nuc": "2/2 samples: norm refuses complex128",
    "linalg.cross": (
        "3/3 samples: RuntimeError: linalg.cross: not implemented for ComplexDouble tensors"
    ),
    "linalg.det": "9/9 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.cholesky": "16/16 samples: no complex128 kernel: linalg_cholesky_ex",
    "linalg.cholesky_ex": "16/16 samples: no complex128 kernel: linalg_cholesky_ex",
    "linalg.vecdot": (
        "44/44 samples: RuntimeError: linalg.vecdot: Expected a floating point or complex tens"
    ),
    "linalg.cond": "3/3 samples: no complex128 kernel: _linalg_svd",
    "linalg.eigh": "8/8 samples: no complex128 kernel: _linalg_eigh",
    "linalg.eigvalsh": "8/8 samples: no complex128 kernel: _linalg_eigh",
    "linalg.householder_product": "8/8 samples: no complex128 kernel: linalg_householder_product",
    "linalg.ldl_factor": "6/6 samples: no complex128 kernel: linalg_ldl_factor_ex",
    "linalg.ldl_factor_ex": "6/6 samples: no complex128 kernel: linalg_ldl_factor_ex",
    "linalg.ldl_solve": "24/24 samples: no complex128 kernel: linalg_ldl_solve",
    "linalg.lstsq": (
        "36/36 samples: RuntimeError: torch.linalg.lstsq: This function doesn't handle types o"
    ),
    "linalg.lstsq.grad_oriented": (
        "36/36 samples: RuntimeError: torch.linalg.lstsq: This function doesn't handle types o"
    ),
    "linalg.matrix_power": (
        "18/18 samples: RuntimeError: linalg.matrix_power: not implemented for ComplexDouble t"
    ),
    "linalg.multi_dot": (
        "7/7 samples: RuntimeError: multi_dot(): not implemented for ComplexDouble tensors"
    ),
    "linalg.norm": (
        "116/116 samples: RuntimeError: linalg.vector_norm: Expected a floating point or complex"
    ),
    "linalg.norm.subgradients_at_zero": (
        "90/90 samples: RuntimeError: linalg.vector_norm: Expected a floating point or complex"
    ),
    "linalg.matrix_norm": (
        "64/64 samples: RuntimeError: linalg.matrix_norm: Expected a floating point or complex"
    ),
    "linalg.qr": "36/36 samples: no complex128 kernel: geqrf",
    "linalg.slogdet": "9/9 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.vector_norm": (
        "180/180 samples: RuntimeError: linalg.vector_norm: Expected a floating point or complex"
    ),
    "linalg.lu_factor": "20/20 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.lu_factor_ex": "20/20 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.lu": "20/20 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.lu_solve": "108/108 samples: no complex128 kernel: linalg_lu_solve",
    "linalg.inv": "8/8 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.inv_ex": "8/8 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.solve": "24/24 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.solve_ex": "24/24 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.solve_triangular": "144/144 samples: no complex128 kernel: linalg_solve_triangular",
    "linalg.matrix_rank": "72/72 samples: no complex128 kernel: _linalg_svd",
    "linalg.matrix_rank.hermitian": "8/8 samples: no complex128 kernel: _linalg_eigh",
    "linalg.pinv": (
        "24/24 samples: RuntimeError: linalg.pinv(ComplexDouble{[5, 5]}): expected a tensor wi"
    ),
    "linalg.pinv.singular": (
        "48/48 samples: RuntimeError: linalg.pinv(ComplexDouble{[3, 3]}): expected a tensor wi"
    ),
    "linalg.pinv.hermitian": (
        "8/8 samples: RuntimeError: linalg.pinv(ComplexDouble{[5, 5]}): expected a tensor wi"
    ),
    "linalg.svd": "216/216 samples: wrong result dtype: complex128 where PyTorch gives float64",
    "linalg.svdvals": "36/36 samples: no complex128 kernel: _linalg_svd",
    "linalg.tensorinv": "2/2 samples: no complex128 kernel: linalg_lu_factor_ex",
    "linalg.tensorsolve": "4/4 samples: no complex128 kernel: linalg_lu_factor_ex",
    "nn.functional.softsign": (
        "3/3 samples: softsign refuses complex128 (its backward formula is the real one, and "
        "|z| is not holomorphic)"
    ),
    "masked.normalize": (
        "30/30 samples: RuntimeError: linalg.vector_norm: Expected a floating point or complex"
    ),
}


# Records whose real-dtype xfail is about float64 gradients, which the complex128 runs do not
# compare: they must pass there.
COMPLEX_PASSES = frozenset({"as_strided_scatter"})


def complex_reason(record: str, device: str) -> str | None:
    """Why ``record`` is expected to fail in complex128 on ``device``, or None."""
    on_device = f"{record}@{device}"
    if on_device in COMPLEX_XFAILS:
        return COMPLEX_XFAILS[on_device]
    if record in COMPLEX_PASSES:
        return None
    return COMPLEX_XFAILS.get(record) or reason(record, device)
