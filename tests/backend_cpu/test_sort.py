"""CPU sort and searchsorted kernels through the public API (sort, argsort, topk, searchsorted),
against numpy's stable argsort. Every dtype; NaN (largest: last ascending, first descending, as
in PyTorch), -0.0 == 0.0, ties kept in order; 0-size, 1-element, non-contiguous and
negative-stride inputs; sizes above the OpenMP threshold and every radix digit in play."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

DTYPES = sorted(OPS["sort"].dtypes, key=lambda d: d.code)  # every dtype, bool first
NUMERIC = sorted(OPS["searchsorted"].dtypes, key=lambda d: d.code)
FLOATS = tuple(d for d in DTYPES if d.is_floating_point)


def sample(shape, dtype, seed=0, full_range=False) -> np.ndarray:
    """Random values with ties; floats get NaN, inf and both zeros; full_range=True spreads
    integers over the whole dtype so that every radix digit differs."""
    rng = np.random.default_rng(seed)
    if dtype is ember.bool:
        return rng.random(shape) < 0.5
    if dtype in FLOATS:
        a = np.round(rng.standard_normal(shape) * 4, 1)
        flat = a.reshape(-1)
        for k, special in enumerate((np.nan, -np.inf, np.inf, 0.0, -0.0, np.nan)):
            flat[k * 7 % max(flat.size, 1) :: 53] = special
        return a.astype(dtype.np)
    info = np.iinfo(dtype.np)
    low, high = (info.min, info.max) if full_range else (max(info.min, -20), min(info.max, 20))
    return rng.integers(low, high, shape, endpoint=True, dtype=dtype.np)


def reference(a: np.ndarray, dim: int, descending: bool) -> tuple[np.ndarray, np.ndarray]:
    """Stable order along dim (NaN largest, like PyTorch): ascending, or descending with ties in
    their original order (the reversed line's stable ascending order, reversed)."""
    keys = a.astype(np.float32) if a.dtype == ml_dtypes.bfloat16 else a
    if descending:
        n = a.shape[dim]
        flipped = np.argsort(np.flip(keys, dim), axis=dim, kind="stable")
        order = n - 1 - np.flip(flipped, dim)
    else:
        order = np.argsort(keys, axis=dim, kind="stable")
    return np.take_along_axis(a, order, dim), order


def check_sort(result, a, dim, descending) -> None:
    values, order = reference(a, dim, descending)
    np.testing.assert_array_equal(result.indices.numpy(), order)
    actual = result.values.numpy()
    if values.dtype == ml_dtypes.bfloat16:  # numpy's NaN-aware comparison misses bfloat16
        actual, values = actual.astype(np.float32), values.astype(np.float32)
    np.testing.assert_array_equal(actual, values)
    assert result.indices.dtype is ember.int64


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(dtype, dim, descending, layouts):
    a = sample((40, 70, 3), dtype)
    for t in layouts(a).values():
        check_sort(ember.sort(t, dim, descending), a, dim % 3, descending)
        check_sort(ember.sort(t, dim, descending, stable=True), a, dim % 3, descending)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sort_long_lines(dtype):
    """Lines long enough for the radix sort, with values over the dtype's whole range."""
    a = sample((3, 5000), dtype, seed=1, full_range=True)
    for descending in (False, True):
        check_sort(ember.sort(ember.from_numpy(a), -1, descending), a, 1, descending)
    b = sample((70_000,), dtype, seed=2, full_range=True)  # one line above the thread threshold
    check_sort(ember.sort(ember.from_numpy(b)), b, 0, False)


@pytest.mark.parametrize(
    "dtype", [ember.bool, ember.int8, ember.int64, ember.bfloat16, ember.float32], ids=str
)
def test_sort_one_long_line_threads(dtype, threads):
    """One line past LINE_PARALLEL (csrc/sort.c) is sorted in chunks on every thread: ties in
    input order and NaN last (first descending), as on one thread, both ways."""
    a = sample(((1 << 16) + 4099,), dtype, seed=10)  # few distinct values: long runs of ties
    for descending in (False, True):
        check_sort(ember.sort(ember.from_numpy(a), 0, descending), a, 0, descending)
    b = sample(((1 << 17) + 1,), dtype, seed=11, full_range=True)
    np.testing.assert_array_equal(
        ember.argsort(ember.from_numpy(b)).numpy(), reference(b, 0, False)[1]
    )


@pytest.mark.parametrize("shape", [(40_000, 3), (2, 40_000), (3,), (1,), (0,), (4, 0), ()])
def test_sort_shapes(shape):
    a = np.asarray(sample(shape, ember.float32, seed=3))
    t = ember.from_numpy(a)
    if not shape:
        result = ember.sort(t)
        assert result.values.item() == a.item() and result.indices.item() == 0
        return
    for dim in range(len(shape)):
        check_sort(ember.sort(t, dim), a, dim, False)
        check_sort(ember.sort(t, dim, True), a, dim, True)


def test_sort_special_floats():
    t = ember.tensor(
        [3.0, float("nan"), -0.0, 0.0, -1.0, float("inf"), float("-inf"), float("nan")]
    )
    values, order = ember.sort(t)
    assert order.tolist() == [6, 4, 2, 3, 0, 5, 1, 7]
    assert np.signbit(values.numpy()[2]) and not np.signbit(values.numpy()[3])
    assert ember.sort(t, descending=True).indices.tolist() == [1, 7, 5, 0, 2, 3, 4, 6]


@pytest.mark.parametrize("dtype", [ember.bool, ember.int16, ember.bfloat16, ember.float32], ids=str)
def test_argsort(dtype):
    a = sample((30, 20), dtype, seed=4)
    t = ember.from_numpy(a)
    np.testing.assert_array_equal(ember.argsort(t, 0).numpy(), reference(a, 0, False)[1])
    got = ember.argsort(t, descending=True, stable=True)
    np.testing.assert_array_equal(got.numpy(), reference(a, 1, True)[1])


@pytest.mark.parametrize("dtype", [ember.uint8, ember.int64, ember.float16, ember.float64], ids=str)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest, layouts):
    a = sample((25, 40), dtype, seed=5)
    values, order = reference(a, 1, largest)
    for t in layouts(a).values():
        got = ember.topk(t, 7, largest=largest)
        np.testing.assert_array_equal(got.indices.numpy(), order[:, :7])
        np.testing.assert_array_equal(got.values.numpy(), values[:, :7])
    assert ember.topk(ember.from_numpy(a), 0, dim=0).values.shape == (0, 40)


# ---- searchsorted ----------------------------------------------------------------------------
def search_reference(seq, values, right):
    side = "right" if right else "left"
    if seq.ndim == 1:
        return np.searchsorted(seq, values, side=side)
    rows = [
        np.searchsorted(s, v, side=side)
        for s, v in zip(seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1]))
    ]
    return np.stack(rows).reshape(values.shape)


def sorted_sample(shape, dtype, seed=0):
    a = sample(shape, dtype, seed)
    if dtype in FLOATS:
        a[np.isnan(a.astype(np.float32))] = 0  # numpy and PyTorch differ on NaN in the sequence
    return np.sort(a, axis=-1)


@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(dtype, right, layouts):
    seq = sorted_sample((50,), dtype)
    values = sample((6, 9), dtype, seed=6)
    if dtype in FLOATS:
        values[np.isnan(values.astype(np.float32))] = np.inf  # NaN values are tested below
    expected = search_reference(seq, values, right)
    for s in layouts(seq).values():
        for v in layouts(values).values():
            got = ember.searchsorted(s, v, right=right)
            assert got.dtype is ember.int64
            np.testing.assert_array_equal(got.numpy(), expected)
    rows = sorted_sample((6, 20), dtype, seed=7)
    for s in layouts(rows).values():
        for v in layouts(values).values():
            got = ember.searchsorted(s, v, right=right, out_int32=True)
            assert got.dtype is ember.int32
            np.testing.assert_array_equal(got.numpy(), search_reference(rows, values, right))


def test_searchsorted_options():
    seq = ember.tensor([1.0, 2.0, 2.0, 3.0])
    values = ember.tensor([2.0, float("nan"), 0.0, 9.0])
    assert ember.searchsorted(seq, values).tolist() == [1, 4, 0, 4]
    assert ember.searchsorted(seq, values, side="right").tolist() == [3, 4, 0, 4]
    assert ember.searchsorted(seq, 2.0).item() == 1
    unsorted = ember.tensor([3.0, 1.0, 2.0])
    sorter = ember.argsort(unsorted)
    assert ember.searchsorted(unsorted, ember.tensor([2.5]), sorter=sorter).tolist() == [2]
    assert ember.searchsorted(seq, ember.zeros(0)).shape == (0,)
    assert ember.searchsorted(ember.zeros(0), values).tolist() == [0, 0, 0, 0]


def test_searchsorted_large():
    seq = sorted_sample((1000,), ember.int32, seed=8)
    values = sample((50_000,), ember.int32, seed=9)
    got = ember.searchsorted(ember.from_numpy(seq), ember.from_numpy(values[::-1]))
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, values[::-1]))
