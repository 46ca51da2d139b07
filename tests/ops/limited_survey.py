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
VALUES = "both run; values differ (the row's note says why)"

KNOWN_GAPS = {
    "_unsafe_masked_index": RUNS,
    "addbmm": REFUSES,
    "addr": RUNS,
    "arange": RUNS,
    "cdist": REFUSES,  # PyTorch returns an empty x2's empty result before its dtype check
    "cholesky": REFUSES,
    "combinations": RUNS,
    "count_nonzero": RUNS,
    "eye": RUNS,
    "flip": RUNS,
    "fliplr": RUNS,
    "flipud": RUNS,
    "index_copy": RUNS,
    "index_copy_": RUNS,
    "index_fill": RUNS,
    "index_fill_": RUNS,
    "index_reduce": REFUSES,
    "index_reduce_": REFUSES,
    "index_select": RUNS,
    "inner": REFUSES,
    # torch calls e8m0fnu's NaN (0xFF) finite and NaN at once (isnan True); ember's float32
    # twin says not finite, consistent with its isnan
    "isfinite": VALUES,
    "isneginf": RUNS,
    "isposinf": RUNS,
    "masked_fill": RUNS,
    "masked_scatter": RUNS,
    "masked_scatter_": RUNS,
    "matmul": RUNS,
    "mul": RUNS,
    "mul_": RUNS,
    "nonzero_static": RUNS,
    "norm": REFUSES,
    "outer": RUNS,
    "rot90": RUNS,
    "softsign": RUNS,
    "trace": RUNS,
    "tril": RUNS,
    "triu": RUNS,
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
