"""The survey of the limited dtypes (tests/ops/test_limited_dtypes.py): the rows ember does not
match yet, each with the kind of difference the survey reports (its message has the sample).

A row listed here is still surveyed; its mismatches are not failures. Remove a row when it
passes (``python -m tests.ops.limited_survey`` lists the rows that now pass)."""

from __future__ import annotations

RUNS = (
    "ember runs it (a composite over ops that take these dtypes) where PyTorch's CPU raises "
    "NotImplementedError: the composite needs a refusal of its own"
)
REFUSES = (
    "PyTorch's CPU runs it for this sample (its support depends on the kernel path the shape "
    "takes); ember's twin table (optable/limited.py) does not list it, or not this dtype"
)
ERROR_TYPE = "both refuse, with different exception types"
VALUES = "both run; values differ (PyTorch rounds differently or casts a scalar first)"

KNOWN_GAPS = {
    "softsign": RUNS,
    "isfinite": VALUES,
    "mul": RUNS,
    "mul_": RUNS,
    "norm": REFUSES,
    "count_nonzero": RUNS,
    "max": REFUSES,
    "min": REFUSES,
    "flip": RUNS,
    "tril": RUNS,
    "triu": RUNS,
    "masked_fill": RUNS,
    "index_select": RUNS,
    "index_fill": RUNS,
    "index_fill_": RUNS,
    "matmul": RUNS,
    "outer": RUNS,
    "einsum": REFUSES,
    "ldexp": REFUSES,
    "signbit": REFUSES,
    "isposinf": RUNS,
    "isneginf": RUNS,
    "inner": REFUSES,
    "index_copy": RUNS,
    "index_copy_": RUNS,
    "kthvalue": REFUSES,
    "masked_scatter": RUNS,
    "masked_scatter_": RUNS,
    "combinations": RUNS,
    "rot90": RUNS,
    "fliplr": RUNS,
    "flipud": RUNS,
    "msort": REFUSES,
    "as_strided_scatter": REFUSES,
    "sum_to_size": REFUSES,
    "cholesky": REFUSES,
    "cross": ERROR_TYPE,
    "matrix_power": REFUSES,
    "matrix_exp": ERROR_TYPE,
    "_scaled_mm": VALUES,
    "_unsafe_masked_index": RUNS,
}
# Off the CPU a limited dtype's in-place copy is refused (docs/float8.md): a declared refusal.
DEVICE_REFUSES = (NotImplementedError,)


def main() -> None:
    """Print the rows of KNOWN_GAPS that now match torch on the CPU."""
    from ember import _dtype as dt

    from .test_limited_dtypes import survey

    for name in KNOWN_GAPS:
        if not any(survey(name, "cpu", d) for d in dt.LIMITED):
            print(name)


if __name__ == "__main__":
    main()
