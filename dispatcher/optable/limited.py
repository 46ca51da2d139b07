"""The rows that accept PyTorch's limited-support dtypes (float8, uint16/32/64): moving and
copying data, whose CPU kernels are the backend's copy and fill, and the ops PyTorch's CPU build
runs on them, computed in a twin dtype (``kinds/twin.py``; see docs/float8.md). Every other row
refuses them with PyTorch's NotImplementedError, as PyTorch's CPU build does."""

from __future__ import annotations

from ember import _dtype as dt

from ..kinds import twin

LIMITED = frozenset(dt.LIMITED)
# The rows with CPU kernels for them (copy_, fill_) and those that run on those kernels.
WIDEN = frozenset({"copy_", "fill_", "clone", "contiguous", "zero_"})
# Composites PyTorch computes from the same parts (its einsum is permutes, sums, mul and bmm;
# its addbmm an addmm per batch, its inner a tensordot), or that refuse these dtypes themselves
# where PyTorch's kernels do (index_reduce): each part runs or refuses as PyTorch's does.
WIDEN |= {"einsum", "addbmm", "index_reduce", "inner"}


def widen(ops: dict) -> None:
    """Add the limited dtypes to the rows in WIDEN."""
    for op in ops.values():
        if op.name in WIDEN or (op.inplace_of is not None and op.inplace_of.name in WIDEN):
            op.dtypes = op.dtypes | LIMITED


# The ops PyTorch 2.13's CPU build runs on these dtypes (tests/ops/test_limited_dtypes.py asks
# torch), by the dtypes it runs them on, in the twin modes of kinds/twin.py.
FLOAT8 = frozenset(dt.FLOAT8)
FLOAT8_FINITE = FLOAT8 - {dt.float8_e8m0fnu}  # e8m0fnu has no sign, no zero: no abs, no mm
UNSIGNED = frozenset(dt.WIDE_UNSIGNED)
EVERY = LIMITED
_UNSIGNED_MATH = ("bitwise_and", "bitwise_or", "bitwise_xor")
_UNSIGNED_IDENTITY = ("floor", "ceil", "round", "trunc", "nan_to_num")
_EVERY = ("eq", "ne", "where", "isnan", "all", "any", "count_nonzero", "conj_physical", "fill")
_EVERY += ("mul", "outer", "index_select")
TWINS = {
    **dict.fromkeys(_UNSIGNED_MATH + _UNSIGNED_IDENTITY, UNSIGNED),
    **dict.fromkeys(_EVERY, EVERY),
    "isreal": EVERY,
    "positive": EVERY,
    "isinf": UNSIGNED | {dt.float8_e5m2},
    "isfinite": UNSIGNED | {dt.float8_e5m2, dt.float8_e8m0fnu},
    "abs": FLOAT8_FINITE,
    **dict.fromkeys(("mm", "matmul", "addmm"), FLOAT8_FINITE),
    "as_strided_scatter": EVERY,
    "linear": FLOAT8_FINITE,
    "masked_select": FLOAT8,
}
ORDERED = dict.fromkeys(("sort", "argsort", "msort"), UNSIGNED)
# Sums and products of unsigned values are int64 in PyTorch: the values widen to it.
WIDENED = dict.fromkeys(("sum", "prod", "nansum"), UNSIGNED)
# Along a dim, PyTorch copies a 0-dim input's one value before any kernel (a scan of uint16
# widens to int64 and runs already): those calls alone run, the others are refused.
SCALAR = {
    **dict.fromkeys(("max", "min", "kthvalue", "aminmax"), EVERY),
    **dict.fromkeys(("cumsum", "cumprod"), FLOAT8),
}
# With an empty index PyTorch returns self's values before any kernel, and a reduction or scan
# of an empty input computes nothing (float8 sums: uint16/32/64 ones widen for any shape).
EMPTY_INDEX = dict.fromkeys(("index_add",), EVERY)
EMPTY_INPUT = {
    **dict.fromkeys(("sum", "prod", "nansum", "cumsum", "cumprod"), FLOAT8),
    **dict.fromkeys(("amax", "amin", "max", "min"), EVERY),
    # PyTorch's cdist returns before its kernel when an input is empty, its norm (a vector
    # norm) computes nothing for one
    **dict.fromkeys(("cdist", "norm"), FLOAT8),
    "mm": EVERY,  # PyTorch's mm returns an empty product before its kernel
}
# A vector norm over dims that all have size 1 is PyTorch's abs (ne for the 0-norm), which
# runs on the float8 formats with a sign.
ONE_ELEMENT = {"norm": FLOAT8_FINITE}
# The reductions that cast their input to a given dtype= first (PyTorch's make_reduction): any
# limited input runs then; mean and nanmean are composites over sum, which casts.
CASTS = frozenset({"sum", "prod", "nansum", "cumsum", "cumprod"})


def twins(ops: dict) -> None:
    """Give the rows of the tables above and CASTS (and their in-place forms) their twins: the
    runner's refusal of one of those dtypes runs the twin computation (``Op.refused``)."""
    tables = (
        (TWINS, twin.BITS),
        (ORDERED, twin.ORDERED),
        (WIDENED, twin.WIDENED),
        (SCALAR, twin.SCALAR),
        (EMPTY_INDEX, twin.EMPTY_INDEX),
        (EMPTY_INPUT, twin.EMPTY_INPUT),
        (ONE_ELEMENT, twin.ONE_ELEMENT),
    )
    for op in ops.values():
        base = op.inplace_of or op
        modes = tuple((table[base.name], mode) for table, mode in tables if base.name in table)
        if modes or base.name in CASTS:
            op.twins = twin.Twins(modes, base.name in CASTS)
