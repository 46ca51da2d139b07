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

from .symbolic import elementwise, factory, index, linalg, nn, reduction, shape

FAMILIES = (elementwise, reduction, shape, nn, linalg, index, factory)


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
_LAPACK_OPS = ("_linalg_eigh", "_linalg_svd", "geqrf", "linalg_cholesky_ex",
               "linalg_householder_product", "linalg_ldl_factor_ex", "linalg_ldl_solve",
               "linalg_lstsq", "linalg_lu_factor_ex", "linalg_lu_solve",
               "linalg_solve_triangular")  # fmt: skip
_RANDOM = "a random op: ONNX's generators are not ember's Philox streams, export in eval mode"
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
    "bernoulli": _RANDOM,
    "bernoulli_": _RANDOM,
    "multinomial": _RANDOM,
    "normal_": _RANDOM,
    "uniform_": _RANDOM,
    "random_": _RANDOM,
    "randperm": _RANDOM,
    "_amp_foreach_non_finite_check_and_unscale_": _TRAINING,
    "_amp_update_scale_": _TRAINING,
    **dict.fromkeys(_LAPACK_OPS, _LAPACK),
}


def expands(op) -> bool:
    """Whether the exporter records ``op``'s decomposition instead of ``op``: it has one, no
    rule, and no reason in UNMAPPED."""
    name = (op.inplace_of or op).name
    return op.decomposition is not None and name not in TABLE and name not in UNMAPPED
