"""The mapping table: op-table op name -> the rule that writes it in ONNX ops.

One table keyed by op name, as the op table is; each family's module holds its part
(``symbolic/``). A rule is called as ``rule(g, *args)`` with the node's schema arguments
(``jit.onnx.convert`` says what each argument arrives as) and returns the output value (a tuple
for several outputs, a list for ``Tensor[]``). In-place variants (``relu_``) use their
functional op's rule. An op absent here raises ``UnsupportedOperatorError`` naming the op and
the opset; a rule raises the same, with the first opset that has it, when the target is older.

A composite op with no rule (its row has a decomposition, as the nn.functional rows'
``from_nn``) is traced as the ops of its decomposition (``expands``), as PyTorch's exporter
inlines a function it has no symbolic for; a rule of its own is written where ONNX has one op
for it (``linear`` as ``Gemm``, convolutions as ``Conv``).
"""

from __future__ import annotations

from .symbolic import (
    elementwise,
    factory,
    index,
    linalg,
    nn,
    recurrent,
    reduction,
    resize,
    shape,
    special,
)

FAMILIES = (elementwise, reduction, shape, nn, resize, recurrent, linalg, index, factory, special)


def _join(families) -> dict:
    table: dict = {}
    for family in families:
        overlap = table.keys() & family.TABLE.keys()
        if overlap:
            raise RuntimeError(f"ONNX rules defined twice: {sorted(overlap)}")
        table.update(family.TABLE)
    return table


TABLE = _join(FAMILIES)

_TRAINING = "an optimizer step's op (GradScaler): exported models run inference"
# ember.linalg's composites trace into these primitives, which ONNX has no op for (nor has
# PyTorch's exporter a symbolic for them).
_LAPACK = "a LAPACK factorization or solve: ONNX has no such op"
_LAPACK_OPS = ("_linalg_eig", "_linalg_eigh", "_linalg_svd", "geqrf", "linalg_cholesky_ex",
               "linalg_householder_product", "linalg_ldl_factor_ex", "linalg_ldl_solve",
               "linalg_lstsq", "linalg_lu_factor_ex", "linalg_lu_solve",
               "linalg_solve_triangular")  # fmt: skip
_RANDOM = "a random op: ONNX's generators are not ember's Philox streams, export in eval mode"
_FFT = (
    "complex tensors: ONNX's DFT carries them as a trailing dim of (real, imaginary), and "
    "ember's exporter has no complex value type"
)
_BESSEL = "ONNX has no Bessel or Airy function (PyTorch evaluates them by Chebyshev series)"
_POLYNOMIAL = (
    "the degree n is a tensor, per element: the recurrence runs as long as the values say, "
    "which no ONNX op does (nor has PyTorch's exporter a symbolic for it)"
)
_NO_ERFC = "ONNX has no erfc: 1 - erf(x) rounds to 0 in float32 where the result is still finite"
# ember.special's functions that ONNX has neither an op nor a closed form for (the others are
# in symbolic/special.py).
_SPECIAL = {
    "lgamma": "ONNX has no log-gamma op",
    "digamma": "ONNX has no digamma (psi) op",
    "polygamma": "ONNX has no polygamma op",
    "igamma": "ONNX has no incomplete gamma function",
    "igammac": "ONNX has no incomplete gamma function",
    "special_zeta": "ONNX has no Hurwitz zeta function",
    "erfinv": "ONNX has no inverse error function",
    "special_ndtri": "ONNX has no inverse error function (ndtri is sqrt(2) erfinv(2p - 1))",
    "special_erfcx": _NO_ERFC + " (x > 3.9: exp(x^2) erfc(x) becomes 0)",
    "special_log_ndtr": _NO_ERFC + " (x < -5.5: log(ndtr(x)) becomes -inf)",
    **dict.fromkeys(
        ("i0", "special_i0e", "special_i1", "special_i1e", "special_modified_bessel_i0",
         "special_modified_bessel_i1", "special_modified_bessel_k0", "special_modified_bessel_k1",
         "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1",
         "special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1",
         "special_airy_ai"),
        _BESSEL,
    ),
    **dict.fromkeys(
        ("special_chebyshev_polynomial_t", "special_chebyshev_polynomial_u",
         "special_chebyshev_polynomial_v", "special_chebyshev_polynomial_w",
         "special_shifted_chebyshev_polynomial_t", "special_shifted_chebyshev_polynomial_u",
         "special_shifted_chebyshev_polynomial_v", "special_shifted_chebyshev_polynomial_w",
         "special_hermite_polynomial_h", "special_hermite_polynomial_he",
         "special_laguerre_polynomial_l", "special_legendre_polynomial_p"),
        _POLYNOMIAL,
    ),
}  # fmt: skip
# Ops with no mapping, and why (the error says it). A test checks that every op-table op is in
# TABLE or here, so a new op gets a decision.
UNMAPPED = {
    "as_strided": "ONNX tensors have no strides",
    "unfold": "no ONNX op takes overlapping windows of a dim",
    "diagonal": "no ONNX op reads a diagonal of a tensor of any rank",
    "diag": "no ONNX op builds or reads a diagonal of any offset",
    "cumprod": "ONNX has CumSum but no cumulative product",
    "searchsorted": "ONNX has no binary search",
    "nextafter": "ONNX has no float-bit stepping op",
    "bitwise_left_shift": "ONNX's BitShift takes unsigned integers only",
    "bitwise_right_shift": "ONNX's BitShift takes unsigned integers only",
    "put_": "writes through flat indices into a tensor in place",
    "view_as_real": "ONNX has no complex element types",
    "view_as_complex": "ONNX has no complex element types",
    "_conj": "ONNX has no complex element types (the conjugate view of a complex tensor)",
    "_neg_view": "ONNX has no complex element types (the negated imaginary part's view)",
    "_sample_dirichlet": _RANDOM,
    "bernoulli": _RANDOM,
    "bernoulli_": _RANDOM,
    "multinomial": _RANDOM,
    "normal_": _RANDOM,
    "uniform_": _RANDOM,
    "random_": _RANDOM,
    "randperm": _RANDOM,
    "_standard_gamma": _RANDOM,
    "poisson": _RANDOM,
    "binomial": _RANDOM,
    "_amp_foreach_non_finite_check_and_unscale_": _TRAINING,
    "_amp_update_scale_": _TRAINING,
    **dict.fromkeys(_LAPACK_OPS, _LAPACK),
    **dict.fromkeys(("_fft_c2c", "_fft_r2c", "_fft_c2r"), _FFT),
    **_SPECIAL,
}


def expands(op) -> bool:
    """Whether the exporter records ``op``'s decomposition instead of ``op``: it has one, no
    rule, and no reason in UNMAPPED."""
    name = (op.inplace_of or op).name
    return op.decomposition is not None and name not in TABLE and name not in UNMAPPED
