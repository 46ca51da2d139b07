"""How the composite rows of ember.linalg are written: one call per op, the rest shared.

A composite's decomposition checks its own arguments with PyTorch's messages (as the LAPACK
runners do), so its runner calls the decomposition directly instead of the generic dtype check.
``signs`` says which outputs are vectors defined up to sign (singular and eigenvectors): output
index -> the dim along which each vector lies, so that tests compare them up to that sign.
``old=True`` marks PyTorch's top-level names (``ember.inverse``, ``Tensor.det``...); the others are
reached through ``ember.linalg`` only.
"""

from __future__ import annotations

from ember import _dtype as dt

from ..kinds.matrices import DTYPES
from ..opdef import BY_KIND, OUT_ELEMENTWISE, Kind, OpDef, Out, Promotion

# Results of factorizations in float32 differ from the float64 references by condition number
# times float32's epsilon; the samples keep condition numbers below ~100.
TOLERANCES = {dt.float32: (1e-4, 1e-4), dt.float64: (1e-7, 1e-7)}

# out= of the public functions where PyTorch's differs from the kind's (exact dtype, no overlap
# check): no out= at all, or an out of another dtype the result is cast into.
_CAST = Out("cast", None)
OUT_RULES = {
    "det": None, "logdet": None, "matrix_exp": None, "pinverse": None,
    "cholesky": _CAST, "cholesky_inverse": _CAST, "cholesky_solve": _CAST,
    "matrix_power": _CAST, "geqrf": _CAST, "orgqr": _CAST, "kron": OUT_ELEMENTWISE,
    "cross": Out("exact", "any"), "linalg_pinv": _CAST, "linalg_matrix_rank": _CAST,
}  # fmt: skip


def run_decomposition(op, *args):
    from ..kinds.functional import refuse_non_tensors

    refuse_non_tensors(op, args)
    return op.decomposition(*args)


# vmap and forward AD run such rows as their parts (kinds/functional.runs_decomposition)
run_decomposition.only_decomposes = True


def composite(
    schema: str,
    decomposition,
    reference,
    samples: str,
    *,
    old: bool = False,
    method: bool | None = None,
    dtypes=DTYPES,
    display: str | None = None,
    differentiable: bool = True,
    tolerances: dict | None = None,
    promotion: Promotion = Promotion.DEFAULT,
    signs: dict | None = None,
    check=None,
    notes: str = "",
) -> OpDef:
    name = schema.partition("(")[0]
    return OpDef(
        schema,
        Kind.LINALG,
        reference,
        promotion=promotion,
        dtypes=frozenset(dtypes),
        differentiable=differentiable,
        decomposition=decomposition,
        runner=run_decomposition,
        function=old,
        method=old if method is None else method,
        samples=samples,
        tolerances=TOLERANCES if tolerances is None else tolerances,
        attrs={
            "display": display or _display(name, old),
            **({"signs": signs} if signs else {}),
            **({"check": check} if check else {}),  # a refusal the dtypes cannot say (tests)
        },
        out=OUT_RULES.get(name, BY_KIND),
        notes=notes,
    )


def _display(name: str, old: bool) -> str:
    """PyTorch's name for the op in messages: ``linalg.inv`` for linalg_inv_ex."""
    if old:
        return name
    base = name.removeprefix("linalg_").removesuffix("_ex")
    return f"linalg.{base}"
