"""What the generated tests expect of an op: accepted dtypes, result dtypes, closeness to the
reference. Everything here is derived from the op table row; nothing names a particular op."""

from __future__ import annotations

import warnings

import numpy as np

import ember
from ember import _dtype as dt
from ember.dispatcher.opdef import Kind, Promotion

from .sampling import Arr

ALL_DTYPES = dt.ALL
BY_NAME = {d.name: d for d in ALL_DTYPES}

# Ops whose reference must run in the input's own float dtype: the answer depends on its format
# (diff: PyTorch rounds each order's differences to the dtype before the next order).
NATIVE_PRECISION = frozenset({"nextafter", "nan_to_num", "diff"})


def accepted_dtypes(op) -> list:
    """Input dtypes the op takes: its table dtypes (what it computes in), plus those it promotes
    into them: integers and bool to the default float (``exp(int_tensor)`` is a float32 exp),
    or to int64 for sums and products (``cumsum(bool_tensor)`` counts)."""
    accepted = set(op.dtypes)
    if op.promotion is Promotion.INT_TO_FLOAT:
        accepted |= set(dt.INTS) | {dt.bool_}
    if op.promotion is Promotion.BOOL_TO_LONG and dt.int64 in accepted:
        accepted |= set(dt.INTS) | {dt.bool_}
    return [d for d in ALL_DTYPES if d in accepted]


def rejected_dtypes(op) -> list:
    accepted = accepted_dtypes(op)
    return [d for d in ALL_DTYPES if d not in accepted]


def result_dtype(op, dtype):
    """The dtype of the op's (first) result for inputs of ``dtype``, by its promotion kind."""
    kind = op.promotion
    floating = dtype.is_floating_point
    if kind is Promotion.INT_TO_FLOAT and not floating:
        return ember.get_default_dtype()
    if kind is Promotion.ALWAYS_BOOL:
        keeps = dtype is ember.uint8 and op.info.get("keeps_uint8")  # all/any of uint8
        return ember.uint8 if keeps else ember.bool
    if kind is Promotion.UINT64:
        return ember.uint64
    if kind is Promotion.LONG or (kind is Promotion.BOOL_TO_LONG and not floating):
        # elementwise (square): only bool becomes int64; reductions accumulate integers in it
        elementwise = op.kind is Kind.ELEMENTWISE and dtype is not ember.bool
        return dtype if elementwise else ember.int64
    return dtype


# Integer results named in schemas: argmax-style indices, LAPACK's pivots and infos, ranks.
NAMED_INTEGER_RESULTS = {"indices": ember.int64, "rank": ember.int64, "pivots": ember.int32,
                         "info": ember.int32, "exponent": ember.int32,
                         "reserve": ember.uint8, "inverse_indices": ember.int64,
                         "counts": ember.int64}  # fmt: skip


def output_dtypes(op, dtype, count: int, first=None) -> list:
    """Expected dtypes of ``count`` outputs: NAMED_INTEGER_RESULTS, else the main dtype."""
    main = first or result_dtype(op, dtype)
    names = [name for _typ, name in op.schema.returns]
    return [
        NAMED_INTEGER_RESULTS.get(names[i], main) if i < len(names) else main for i in range(count)
    ]


def mutates(op) -> bool:
    """In-place ops (``add_``, ``copy_``, ``put_``...): their first argument is ``self``."""
    args = op.schema.args
    return bool(args) and args[0].name == "self"


def is_view_op(op) -> bool:
    return (op.inplace_of or op).kind is Kind.VIEW


def reference(op, sample):
    """The numpy reference's result for ``sample``, computed in float64 for float inputs and for
    ops that promote integers to floats."""
    base = op.inplace_of or op
    to_float = base.promotion is Promotion.INT_TO_FLOAT
    np_args = sample.numpy_args(base.name not in NATIVE_PRECISION, ints_too=to_float)
    if base.promotion is Promotion.ALWAYS_BOOL or base.name in STEP_FUNCTIONS:
        np_args = _round_scalars(sample, np_args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return base.defn.reference(*np_args)


# Ops whose result jumps where a quotient crosses an integer: a Python float rounded to the
# tensor's dtype (as PyTorch rounds it) can land on the other side of a jump than the unrounded
# one, so their reference rounds it too (bfloat16 fmod(-1.562, -0.78125) is -0 in PyTorch).
STEP_FUNCTIONS = frozenset({"fmod", "remainder", "floor_divide"})


def _round_scalars(sample, np_args) -> tuple:
    """A comparison with a Python float computes in the tensor's float dtype, the scalar rounded
    to it first, as in PyTorch: bfloat16 ``x < -1.242`` compares with -1.2421875."""
    floats = [
        a.values.dtype
        for a in sample.args
        if isinstance(a, Arr) and dt.from_numpy_dtype(a.values.dtype).is_floating_point
    ]
    if not floats:
        return np_args
    return tuple(float(np.asarray(a, floats[0])) if type(a) is float else a for a in np_args)


def as_outputs(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def host(t) -> np.ndarray:
    # Lazy conjugate/negative views are read resolved, as PyTorch's test harness does.
    return np.asarray(t.detach().resolve_conj().resolve_neg().cpu().numpy())


def assert_matches(got, want, dtype, tolerance, what: str) -> None:
    """``got`` (an ember tensor) has ``dtype``, ``want``'s shape, and its values within
    ``tolerance`` = (rtol, atol) after ``want`` is rounded to ``dtype`` as the op's result is."""
    assert isinstance(got, ember.Tensor), f"{what}: expected a Tensor, got {type(got).__name__}"
    assert got.dtype is dtype, f"{what}: result dtype {got.dtype.name}, expected {dtype.name}"
    want = np.asarray(want)
    actual = host(got)
    assert actual.shape == want.shape, (
        f"{what}: result shape {list(actual.shape)}, expected {list(want.shape)}"
    )
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = want.astype(dtype.np)
    if dtype.is_floating_point or dtype.is_complex:
        rtol, atol = tolerance
        wide = np.complex128 if dtype.is_complex else np.float64
        np.testing.assert_allclose(
            actual.astype(wide),
            want.astype(wide),
            rtol=rtol,
            atol=atol,
            equal_nan=True,
            err_msg=what,
        )
    else:
        np.testing.assert_array_equal(actual, want, err_msg=what)


def align_signs(op, got, want) -> tuple:
    """Outputs a row declares defined up to sign (``attrs['signs']``: output -> the dim its
    vectors run along), each of ``got``'s vectors flipped to point like ``want``'s."""
    signs = (op.inplace_of or op).info.get("signs")
    if not signs:
        return got
    got = list(got)
    for index, dim in signs.items():
        t = got[index]
        actual = host(t).astype(np.float64)
        if actual.size == 0:
            continue
        dot = (actual * np.asarray(want[index], np.float64)).sum(axis=dim, keepdims=True)
        flipped = np.where(dot < 0, -actual, actual).astype(t.dtype.np)
        got[index] = ember.from_numpy(np.ascontiguousarray(flipped))
    return tuple(got)


def target_of(sample):
    """The ``self`` argument of an in-place sample, or None when it is not a tensor."""
    first = sample.args[0] if sample.args else None
    return first if isinstance(first, Arr) else None


def writes_overlap(a: Arr) -> bool:
    """Whether an in-place write into ``a`` would hit one memory location twice (stride 0)."""
    return a.values.size > 0 and any(
        s == 0 and n > 1 for s, n in zip(a.values.strides, a.values.shape)
    )


def gaps(arg, t):
    """For a ``sliced`` tensor, the buffer elements between its elements (None otherwise): an
    in-place op must leave them alone."""
    if not isinstance(arg, Arr) or arg.layout != "sliced":
        return None
    return host(t._base)[..., 0::2].copy()


def assert_gaps_kept(arg, t, before, what: str) -> None:
    if before is not None:
        np.testing.assert_array_equal(gaps(arg, t), before, f"{what}: wrote outside the view")


def can_cast(src, dst) -> bool:
    """In-place results may be written to the target if they do not drop a category."""
    return src.category <= dst.category
