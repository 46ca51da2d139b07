"""CPU reduction and scan kernels against numpy, through the public API.

Every case runs over every dtype the op lists and over layouts that reach the kernels' distinct
paths: contiguous, transposed, sliced (strides above 1), negative strides, broadcast (stride 0);
shapes with 0-size dims, one element, 0-dim, and above the OpenMP threshold (32768 elements).
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest
import torch

import ember

FLOATS = ("float16", "bfloat16", "float32", "float64")
NUMERIC = ("uint8", "int8", "int16", "int32", "int64", *FLOATS)
ALL = ("bool", *NUMERIC)
LAYOUTS = ("contiguous", "transposed", "sliced", "negative", "broadcast")
# Relative tolerance of results accumulated in double and rounded once to the dtype.
RTOL = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 1e-6, "float64": 1e-12}
# Absolute error per unit of sum(|x|) (the `scale` of a cancelling sum): double accumulation's,
# except float32 sums of contiguous runs, which add in float as PyTorch's do (csrc/cascade.h):
# at these sizes (at most 33000 elements: 1031 rows of 32 lanes) an element goes through at most
# 16 + 16 + 5 level additions and 24 of lanes and leftovers, under 64 roundings (2^-24) of
# sum(|x|). test_cascade_sum.py holds the bits to PyTorch's.
SCALE_ATOL = {("sum", "float32"): 64 * 2.0**-24}
# Long products and float16 sums of broadcast data overflow, in numpy as in ember.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value")

# (shape, dims to reduce over): small, empty, one-element, 0-dim, and large (parallel) cases.
CASES = [
    ((), [None, 0]),
    ((1,), [None, 0]),
    ((7,), [None, 0, -1]),
    ((0,), [None, 0]),
    ((3, 0), [None, 0, 1]),
    ((0, 4), [None, 0, 1]),
    ((5, 7), [None, 0, 1, (0, 1)]),
    ((2, 3, 4), [None, 0, 1, 2, (0, 2), (-1, -2)]),
    ((1, 5, 1), [None, 0, 1, (0, 2)]),
    ((33000,), [None, 0]),
    ((300, 257), [None, 0, 1]),
    ((24000, 3), [0, 1]),
    ((3, 40, 300), [(0, 2), 1]),
]


def rng_for(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def np_dtype(name: str):
    return (
        ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype("bool" if name == "bool" else name)
    )


def values(shape, dtype: str, rng, kind: str = "normal") -> np.ndarray:
    """Random data with ties (small integers) and, for prod, factors near 1."""
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.6)
    if dtype in FLOATS:
        if kind == "prod":
            data = rng.uniform(0.8, 1.2, shape) * rng.choice([-1.0, 1.0], shape)
        else:
            data = rng.standard_normal(shape)
        return np.asarray(data, np_dtype(dtype))
    low = 0 if dtype == "uint8" else -5
    return np.asarray(rng.integers(low, 6, shape), dtype)


def layout(shape, dtype: str, kind: str, rng, data: str = "normal") -> np.ndarray:
    """A numpy view of `shape` with the layout `kind` (ember.from_numpy keeps its strides)."""
    ndim = len(shape)
    if ndim == 0 or kind == "contiguous":
        return values(shape, dtype, rng, data)
    if kind == "transposed":
        return values(shape[::-1], dtype, rng, data).transpose()
    if kind == "sliced":
        base = values(tuple(2 * s + 1 for s in shape), dtype, rng, data)
        return base[(slice(1, None, 2),) * ndim]
    if kind == "negative":
        return values(shape, dtype, rng, data)[(slice(None, None, -1),) * ndim]
    if kind == "broadcast":
        small = tuple(1 if i % 2 == 0 else s for i, s in enumerate(shape))
        return np.broadcast_to(values(small, dtype, rng, data), shape)
    raise ValueError(kind)


def axis(dims, ndim: int):
    """numpy's axis for ember's dims (a 0-dim tensor takes dim 0 or -1; numpy takes none)."""
    if dims is None or ndim == 0:
        return None
    return dims if isinstance(dims, tuple) else (dims,)


def assert_matches(ours, expected: np.ndarray, dtype: str, scale=None, per_scale=1e-12) -> None:
    """Exact for bool/integers; floats within the dtype's rounding of a double result (`scale`
    times `per_scale` bounds the absolute error of cancelling sums)."""
    got = ours.numpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype not in FLOATS or expected.dtype.kind in "biu":
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
        np.testing.assert_array_equal(got, expected)
        return
    got, expected = got.astype(np.float64), expected.astype(np.float64)
    atol = 0.0 if scale is None else per_scale * np.asarray(scale, np.float64)
    close = np.abs(got - expected) <= RTOL[dtype] * np.abs(expected) + atol
    close |= (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert close.all(), f"{dtype}: got {got[~close][:5]}, expected {expected[~close][:5]}"


def cases():
    for shape, dim_list in CASES:
        for dims in dim_list:
            yield shape, dims


# ---- reductions over a set of dims -------------------------------------------------------------
def _np_sum(a, dims, keepdim):
    if a.dtype.kind in "biu":
        return a.astype(np.int64).sum(axis=axis(dims, a.ndim), keepdims=keepdim)
    return a.astype(np.float64).sum(axis=axis(dims, a.ndim), keepdims=keepdim).astype(a.dtype)


def _np_prod(a, dims, keepdim):
    if a.dtype.kind in "biu":
        return a.astype(np.int64).prod(axis=axis(dims, a.ndim), keepdims=keepdim)
    return a.astype(np.float64).prod(axis=axis(dims, a.ndim), keepdims=keepdim).astype(a.dtype)


def _np_extreme(fn):
    def reference(a, dims, keepdim):
        return fn(a, axis=axis(dims, a.ndim), keepdims=keepdim)

    return reference


def _np_logical(fn):
    """PyTorch's all/any give bool, except uint8 for uint8 inputs."""

    def reference(a, dims, keepdim):
        out = np.asarray(fn(a, axis=axis(dims, a.ndim), keepdims=keepdim))
        return out.astype(np.uint8) if a.dtype == np.uint8 else out

    return reference


# name: (numpy reference, data kind, whether an empty reduction is an error)
REDUCTIONS = {
    "sum": (_np_sum, "normal", False),
    "prod": (_np_prod, "prod", False),
    "amax": (_np_extreme(np.max), "normal", True),
    "amin": (_np_extreme(np.min), "normal", True),
    "all": (_np_logical(np.all), "normal", False),
    "any": (_np_logical(np.any), "normal", False),
}


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", list(REDUCTIONS))
def test_reduce(op, dtype, kind):
    reference, data, needs_elements = REDUCTIONS[op]
    rng = rng_for(op, dtype, kind)
    fn = getattr(ember, op)
    for shape, dims in cases():
        a = layout(shape, dtype, kind, rng, data)
        t = ember.from_numpy(a)
        reduced = (
            range(len(shape)) if dims is None else [d % max(len(shape), 1) for d in axis(dims, 1)]
        )
        if needs_elements and any(d < len(shape) and shape[d] == 0 for d in reduced):
            # PyTorch: no dim named is a RuntimeError, an empty dim named an IndexError.
            with pytest.raises(RuntimeError if dims is None else IndexError):
                fn(t, dims)
            continue
        for keepdim in (False, True):
            expected = np.asarray(reference(a, dims, keepdim))
            scale = np.abs(a.astype(np.float64)).sum(axis=axis(dims, a.ndim), keepdims=keepdim)
            per_scale = SCALE_ATOL.get((op, dtype), 1e-12)
            assert_matches(fn(t, dims, keepdim), expected, dtype, scale, per_scale)


def test_reduce_output_dtypes():
    i8 = ember.from_numpy(np.array([100, 100, 100], np.int8))
    assert ember.sum(i8).dtype == ember.int64 and ember.sum(i8).item() == 300
    assert ember.prod(ember.from_numpy(np.array([True, True]))).dtype == ember.int64
    assert ember.all(i8).dtype == ember.bool and ember.any(ember.zeros(0)).item() is False
    # A requested dtype: the sum wraps in it, as in PyTorch.
    big = ember.from_numpy(np.full(3, 2**30, np.int32))
    assert ember.sum(big, dtype=ember.int32).item() == np.int32(3 * 2**30 - 2**32)
    assert ember.sum(ember.from_numpy(np.ones(4, np.float32)), dtype=ember.float64).item() == 4.0
    # int64 wraps on overflow, like numpy and PyTorch.
    huge = np.array([2**62, 2**62, 2**62, 3], np.int64)
    assert ember.sum(ember.from_numpy(huge)).item() == huge.sum()
    assert ember.prod(ember.from_numpy(huge)).item() == huge.prod()


def test_reduce_empty_identities():
    z = ember.from_numpy(np.zeros((0, 3), np.float32))
    assert ember.sum(z, 0).tolist() == [0.0] * 3
    assert ember.prod(z, 0).tolist() == [1.0] * 3
    assert ember.all(z, 0).tolist() == [True] * 3
    assert ember.any(z, 0).tolist() == [False] * 3
    assert ember.sum(z).item() == 0.0


@pytest.mark.parametrize("dtype", FLOATS)
def test_reduce_nan(dtype):
    a = values((6, 9), dtype, np.random.default_rng(1))
    a[2, 3] = a[4, 0] = np.nan
    t = ember.from_numpy(a)
    for dims in (None, 0, 1):
        for op, reference in (("amax", np.max), ("amin", np.min)):
            expected = reference(a, axis=dims)
            np.testing.assert_array_equal(
                getattr(ember, op)(t, dims).numpy().astype(np.float64), expected.astype(np.float64)
            )
        assert (
            np.isnan(ember.sum(t, dims).numpy().astype(np.float64)).sum()
            == np.isnan(a.astype(np.float64).sum(axis=dims)).sum()
        )
    assert ember.all(ember.from_numpy(np.array([np.nan, -0.0], np.float32)), 0).item() is False
    assert ember.any(ember.from_numpy(np.array([np.nan, 0.0], np.float32)), 0).item() is True


def test_sum_float32_accuracy():
    """float32 sums no less accurate than PyTorch's (the oracle; one thread, whose result does
    not depend on how threads split the work), whole and along either dim."""
    rng = np.random.default_rng(2)
    a = (rng.random(1 << 20) * 10 + 0.1).astype(np.float32)
    m = a.reshape(1024, 1024)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for x, dim in ((a, None), (m, 0), (m, 1)):
            exact = x.astype(np.float64).sum(dim)
            ours = ember.sum(ember.from_numpy(x), dim).numpy().astype(np.float64)
            t = torch.from_numpy(x)
            theirs = (t.sum() if dim is None else t.sum(dim)).numpy().astype(np.float64)
            assert np.all(np.abs(ours - exact) <= np.abs(theirs - exact))
    finally:
        torch.set_num_threads(threads)


def _set_threads(n: int) -> int:
    from ember_backend_cpu import _kernels

    previous = _kernels.lib.ember_num_threads()
    _kernels.lib.ember_set_num_threads(n)
    return previous


@pytest.mark.parametrize("op", ["sum", "prod", "cumsum", "argmax"])
def test_same_bits_on_any_thread_count(op):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((257, 3000)).astype(np.float32)
    if op == "prod":
        a = (1 + a / 100).astype(np.float32)
    views = [a, a.T, a[::-1, ::2], a.reshape(-1)]
    dims = {"sum": [None, 0, 1], "prod": [None, 0, 1], "cumsum": [0, -1], "argmax": [0, -1]}[op]
    results = {}
    previous = _set_threads(1)
    try:
        for threads in (1, 2, 3):
            _set_threads(threads)
            results[threads] = [
                getattr(ember, op)(ember.from_numpy(v), d).numpy()
                for v in views
                for d in dims
                if d is None or d < v.ndim
            ]
    finally:
        _set_threads(previous)
    for threads in (2, 3):
        for one, other in zip(results[1], results[threads]):
            np.testing.assert_array_equal(one, other)


# ---- max/min with indices, argmax/argmin -------------------------------------------------------
def _one_dim_cases():
    for shape, dim_list in CASES:
        for dim in dim_list:
            if isinstance(dim, int) and not (shape and shape[dim] == 0):
                yield shape, dim


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_indices(op, dtype, kind):
    rng = rng_for(op, dtype, kind)
    np_value, np_index = (np.max, np.argmax) if op == "max" else (np.min, np.argmin)
    for shape, dim in _one_dim_cases():
        a = layout(shape, dtype, kind, rng)
        t = ember.from_numpy(a)
        for keepdim in (False, True):
            result = getattr(ember, op)(t, dim, keepdim)
            if not shape:  # numpy has no axis on 0-dim arrays
                assert result.values.item() == a.item() and result.indices.item() == 0
                continue
            assert_matches(result.values, np_value(a, axis=dim, keepdims=keepdim), dtype)
            assert_matches(result.indices, np_index(a, axis=dim, keepdims=keepdim), "int64")
        if shape and shape[dim] > 0:
            with pytest.raises(IndexError):
                getattr(ember, op)(ember.from_numpy(np.zeros((0, *shape), a.dtype)), 0)


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dtype, kind):
    rng = rng_for(op, dtype, kind)
    reference = getattr(np, op)
    fn = getattr(ember, op)
    for shape, dim in _one_dim_cases():
        a = layout(shape, dtype, kind, rng)
        t = ember.from_numpy(a)
        if not shape:
            assert fn(t, dim).item() == 0 and fn(t).item() == 0
            continue
        for keepdim in (False, True):
            assert_matches(fn(t, dim, keepdim), reference(a, axis=dim, keepdims=keepdim), "int64")
        if 0 not in shape:
            assert fn(t).item() == reference(a)


@pytest.mark.parametrize("dtype", FLOATS)
def test_index_reductions_nan_and_ties(dtype):
    """NaN is the extreme (its first index wins); among equal values the first wins."""
    a = np.zeros((5, 70), np_dtype(dtype))
    a[1, 3] = a[1, 40] = np.nan
    a[3, 10] = a[3, 20] = 1
    a[4, 7] = a[4, 9] = -1
    t = ember.from_numpy(a)
    for dim in (0, 1):
        for op in ("max", "min"):
            result = getattr(ember, op)(t, dim)
            expected = getattr(np, op)(a, axis=dim).astype(np.float64)
            np.testing.assert_array_equal(result.values.numpy().astype(np.float64), expected)
            np.testing.assert_array_equal(
                result.indices.numpy(), getattr(np, "arg" + op)(a, axis=dim)
            )
            arg = getattr(ember, "arg" + op)(t, dim).numpy()
            np.testing.assert_array_equal(arg, getattr(np, "arg" + op)(a, axis=dim))
    assert ember.argmax(t).item() == np.argmax(a) == 1 * 70 + 3


# ---- scans -------------------------------------------------------------------------------------
def _np_scan(fn):
    def reference(a, dim):
        if a.dtype.kind in "biu":
            return fn(a.astype(np.int64), axis=dim)
        return fn(a.astype(np.float64), axis=dim).astype(a.dtype)

    return reference


SCANS = {"cumsum": (_np_scan(np.cumsum), "normal"), "cumprod": (_np_scan(np.cumprod), "prod")}


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", list(SCANS))
def test_scan(op, dtype, kind):
    reference, data = SCANS[op]
    rng = rng_for(op, dtype, kind)
    fn = getattr(ember, op)
    for shape, dims in cases():
        if not isinstance(dims, int):
            continue
        a = layout(shape, dtype, kind, rng, data)
        t = ember.from_numpy(a)
        if not shape:
            assert fn(t, dims).item() == a.item()
            continue
        scale = np.cumsum(np.abs(a.astype(np.float64)), axis=dims)
        assert_matches(fn(t, dims), reference(a, dims), dtype, scale)


def test_scan_integer_results_are_int64():
    t = ember.from_numpy(np.array([[100, 100], [100, 100]], np.int8))
    assert ember.cumsum(t, 0).dtype == ember.int64
    assert ember.cumsum(t, 1).tolist() == [[100, 200], [100, 200]]
    assert ember.cumprod(t, 0).tolist() == [[100, 100], [10000, 10000]]
