"""Glue for the sorting kernels (csrc/sort.c): sort and searchsorted.

The runners (ember/dispatcher/kinds/index.py) have wrapped dims, allocated the outputs and
promoted searchsorted's operands to one dtype; they call sort only for non-empty inputs.
"""

from __future__ import annotations

from ._args import DTYPE_NAMES, addr, raise_status

MAX_SORT_LENGTH = 2**32 - 1  # the kernel sorts 32-bit positions
INT32 = DTYPE_NAMES.index("int32")
NUMERIC_NAMES = DTYPE_NAMES[1:]  # median's rows: integers and floats, not bool


def _dims(t) -> tuple[tuple, tuple]:
    return (t._shape, t._stride) if t._shape else ((1,), (1,))


def _check_sequence(seq, values) -> None:
    """searchsorted's boundaries must have dims (the xpu plugin raises the same)."""
    if not seq._shape:
        raise RuntimeError(
            "searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor [] and input value tensor {list(values._shape)}"
        )


def build(ffi, lib) -> dict:
    null = ffi.NULL

    def sort(values, indices, x, dim, descending, stable):
        # The radix sort is always stable, so `stable` needs nothing more.
        shape, stride = (x._shape, x._stride) if x._shape else ((1,), (1,))
        if shape[dim] > MAX_SORT_LENGTH:
            raise RuntimeError(
                f"sort(): the CPU kernel sorts at most {MAX_SORT_LENGTH} elements along a dim, "
                f"got {shape[dim]} (shape {list(x._shape)})"
            )
        status = lib.ember_sort(
            x._dtype.code, len(shape), dim, shape, addr(x), stride, addr(values), null,
            addr(indices), null, int(descending),
        )  # fmt: skip
        if status:
            raise_status(status, "sort", x._dtype.code)

    def searchsorted(out, sorted_sequence, values, right):
        seq = sorted_sequence
        _check_sequence(seq, values)
        # One sequence row per value: rows follow the values' leading dims (stride 0 along the
        # values' last dim); a 1-D sequence is shared by all.
        rows = seq._stride[:-1] + (0,) if len(seq._shape) > 1 else null
        status = lib.ember_searchsorted(
            seq._dtype.code, int(right), int(out._dtype.code == INT32), len(values._shape),
            values._shape, addr(values), values._stride, addr(seq), rows, seq._shape[-1],
            seq._stride[-1], addr(out),
        )  # fmt: skip
        if status:
            raise_status(status, "searchsorted", seq._dtype.code)

    def make_median(op: str):
        def median(values, indices, x, dim):
            """values/indices: x's rank with size 1 at dim; x non-empty along dim."""
            shape, stride = _dims(x)
            status = lib.ember_median(
                x._dtype.code, len(shape), dim, shape, addr(x), stride, addr(values),
                _dims(values)[1], addr(indices), _dims(indices)[1], int(op == "nanmedian"),
            )  # fmt: skip
            if status:
                raise_status(status, op, x._dtype.code)

        median.__qualname__ = f"cpu.{op}"
        return median

    def unique(values, inverse, counts, x) -> int:
        """The number of unique values of contiguous 1-D x written to values (and inverse and
        counts where given, else None), each of x's length."""
        found = ffi.new("int64_t *")
        status = lib.ember_unique(
            x._dtype.code, x._shape[0], addr(x), x._stride[0], addr(values),
            0 if inverse is None else addr(inverse), 0 if counts is None else addr(counts), found,
        )  # fmt: skip
        if status:
            raise_status(status, "unique", x._dtype.code)
        return found[0]

    return {
        "_unique2": dict.fromkeys(DTYPE_NAMES, unique),
        "median": dict.fromkeys(NUMERIC_NAMES, make_median("median")),
        "nanmedian": dict.fromkeys(NUMERIC_NAMES, make_median("nanmedian")),
        "sort": dict.fromkeys(DTYPE_NAMES, sort),
        "searchsorted": dict.fromkeys(DTYPE_NAMES[1:], searchsorted),
    }
