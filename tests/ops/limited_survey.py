"""The survey of the limited dtypes (tests/ops/test_limited_dtypes.py): the rows ember does not
match yet, each with the kind of difference the survey reports (its message has the sample).

A row listed here is still surveyed; its mismatches are not failures. Remove a row when it
passes (``python -m tests.ops.limited_survey`` lists the rows that now pass)."""

from __future__ import annotations

VALUES = "both run; values differ (the row's note says why)"


# Rows ember runs where PyTorch's CPU build refuses the dtype for want of a kernel, by the
# kernels its NotImplementedError names (``"flip_cpu" not implemented for 'UInt16'``): a loop
# its dispatch macro leaves out, not a call without meaning for the dtype (PyTorch's errors for
# those are RuntimeErrors, and ember raises them too). ember keeps the superset: the composite
# runs over ops that take these dtypes. test_limited_dtypes.py checks that each of torch's
# refusals of these rows is one of these kernels' NotImplementedError.
SUPERSET = {
    "_unsafe_masked_index": ("masked_fill",),
    "addr": ("addr_cpu",),
    "arange": ("arange_cpu",),
    "combinations": ("masked_select",),
    # and e8m0fnu's values differ: torch counts its code 0 (2^-127, the value 0 rounds to) as
    # zero, ember's float32 twin counts it as the nonzero 2^-127
    "count_nonzero": ("nonzero_count_cpu",),
    "eye": ("eye",),
    "flip": ("flip_cpu",),
    "fliplr": ("flip_cpu",),
    "flipud": ("flip_cpu",),
    "index_copy": ("index_copy_cpu",),
    "index_copy_": ("index_copy_cpu",),
    "index_fill": ("index_fill_cpu",),
    "index_fill_": ("index_fill_cpu",),
    "index_select": ("index_select",),  # a 40,000-element uint16 index takes another path
    "isneginf": ("isneginf_cpu",),
    "isposinf": ("isposinf_cpu",),
    "masked_fill": ("masked_fill",),
    "masked_scatter": ("masked_scatter",),
    "masked_scatter_": ("masked_scatter",),
    "matmul": ("addmm_impl_cpu_", "addmv_impl_cpu", "bmm", "dot"),
    "mul": ("mul_cpu_reduced_float",),  # a float8 times a one-element operand
    "mul_": ("mul_cpu_reduced_float",),
    "nonzero_static": ("nonzero_count_cpu",),
    "outer": ("mul_cpu_reduced_float",),
    "rot90": ("flip_cpu",),
    "softsign": ("abs_cpu", "add_stub"),
    "trace": ("trace",),
    "tril": ("tril",),
    "triu": ("triu",),
}
KNOWN_GAPS = {
    **{name: "superset: PyTorch's CPU build lacks " + ", ".join(k) for name, k in SUPERSET.items()},
    # torch calls e8m0fnu's NaN (0xFF) finite and NaN at once (isnan True); ember's float32
    # twin says not finite, consistent with its isnan
    "isfinite": VALUES,
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
