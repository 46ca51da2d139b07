"""CPU indexing kernels through the public API, against numpy: gather/scatter/scatter_add,
index_select/index_add, take/put_, nonzero, and what decomposes into them (masked_select,
unique, tensor indexing). Every dtype; 0-size, 1-element, non-contiguous, negative-stride and
broadcast inputs; sizes above the OpenMP threshold (32768 elements); out-of-range indices."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

# Every dtype of the C kernels, bool first; complex ones have numpy kernels of their own
# (dispatcher/complex_index.py), which the OpInfo suite's complex128 run checks.
DTYPES = sorted((d for d in OPS["gather"].dtypes if not d.is_complex), key=lambda d: d.code)
FLOATS = tuple(d for d in DTYPES if d.is_floating_point)
# Accumulated float results are compared with a float64 reference rounded once.
TOLERANCE = {ember.float16: 2e-3, ember.bfloat16: 1.6e-2, ember.float32: 1e-5, ember.float64: 1e-12}
BIG = 40_000  # above EM_PARALLEL_THRESHOLD


# ---- inputs -------------------------------------------------------------------------------
def sample(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is ember.bool:
        return rng.random(shape) < 0.5
    if dtype in FLOATS:
        return rng.standard_normal(shape).astype(dtype.np)
    info = np.iinfo(dtype.np)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(
        dtype.np
    )


def check(actual, expected, dtype) -> None:
    actual = actual.numpy() if isinstance(actual, ember.Tensor) else actual
    assert actual.shape == expected.shape
    if dtype in FLOATS:
        np.testing.assert_allclose(
            actual.astype(np.float64), expected.astype(np.float64), rtol=TOLERANCE[dtype],
            atol=TOLERANCE[dtype],
        )  # fmt: skip
    else:
        np.testing.assert_array_equal(actual, expected)


def index_along(rng, shape, dim, size, unique=False) -> np.ndarray:
    """int64 indices of `shape` in [0, size); unique=True: no repeats along dim."""
    if not unique:
        return rng.integers(0, size, shape).astype(np.int64)
    keys = rng.random(shape[:dim] + (size,) + shape[dim + 1 :])
    return np.argsort(keys, axis=dim).take(range(shape[dim]), axis=dim).astype(np.int64)


def grid(index: np.ndarray, dim: int) -> tuple:
    """Full coordinates of every index entry with the entry itself at dim."""
    coords = list(np.indices(index.shape, sparse=True))
    coords[dim] = index
    return tuple(coords)


def accumulate_reference(base: np.ndarray, where: tuple, values: np.ndarray, dtype) -> np.ndarray:
    """np.add.at, in float64 for floats (the kernels accumulate in float32 or better)."""
    if dtype in FLOATS:
        wide = base.astype(np.float64)
        np.add.at(wide, where, values.astype(np.float64))
        return wide.astype(dtype.np)
    out = base.copy()
    np.add.at(out, where, values)
    return out


# ---- gather / scatter -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dtype, dim, layouts):
    rng = np.random.default_rng(1)
    a = sample((5, 6, 7), dtype)
    d = dim % 3
    ishape = tuple(4 if i != d else 9 for i in range(3))  # smaller than x apart from dim
    idx = index_along(rng, ishape, d, a.shape[d])
    trimmed = a[tuple(slice(0, s) if i != d else slice(None) for i, s in enumerate(ishape))]
    expected = np.take_along_axis(trimmed, idx, d)
    for t in layouts(a).values():
        for i in layouts(idx).values():
            check(ember.gather(t, dim, i), expected, dtype)


@pytest.mark.parametrize("dtype", [ember.bool, ember.float16, ember.float32, ember.int64], ids=str)
def test_gather_edges(dtype):
    a = sample((3, 4), dtype)
    zero = ember.gather(ember.from_numpy(a), 1, ember.zeros((3, 0), dtype=ember.int64))
    assert zero.shape == (3, 0)
    scalar = ember.from_numpy(np.array(a[0, 0]))
    check(ember.gather(scalar, 0, ember.tensor(0)), np.array(a[0, 0]), dtype)
    big = sample((300, 200), dtype)
    idx = np.random.default_rng(2).integers(0, 200, (300, 200))
    got = ember.gather(ember.from_numpy(big).t(), 0, ember.from_numpy(idx.T.copy()))
    check(got, np.take_along_axis(big.T, idx.T, 0), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 2])
def test_scatter(dtype, dim, layouts):
    rng = np.random.default_rng(3)
    a = sample((5, 6, 7), dtype)
    ishape = (3, 4, 5)
    idx = index_along(rng, ishape, dim, a.shape[dim], unique=True)
    src = sample((4, 5, 6), dtype, seed=4)  # larger than index
    expected = a.copy()
    expected[grid(idx, dim)] = src[:3, :4, :5]
    for t in layouts(a).values():
        for s in layouts(src).values():
            check(ember.scatter(t, dim, ember.from_numpy(idx), s), expected, dtype)
            check(t, a, dtype)  # out of place
    inplace = ember.from_numpy(a.copy())
    assert inplace.scatter_(dim, ember.from_numpy(idx), ember.from_numpy(src)) is inplace
    check(inplace, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add(dtype, dim, layouts):
    rng = np.random.default_rng(5)
    a = sample((6, 5), dtype)
    idx = index_along(rng, (9, 4) if dim == 0 else (5, 12), dim, a.shape[dim])  # repeats
    src = sample(idx.shape, dtype, seed=6)
    expected = accumulate_reference(a, grid(idx, dim), src, dtype)
    for t in layouts(a).values():
        for s in layouts(src).values():
            check(ember.scatter_add(t, dim, ember.from_numpy(idx), s), expected, dtype)


@pytest.mark.parametrize(
    "dtype", [ember.float16, ember.bfloat16, ember.float32, ember.int32], ids=str
)
def test_scatter_add_parallel(dtype):
    """Many repeats on each output along dim while threads split the other dim."""
    rng = np.random.default_rng(7)
    a = np.zeros((8, 50_000), dtype.np)
    idx = rng.integers(0, 8, (64, 50_000))
    src = sample(idx.shape, dtype, seed=8) if dtype in FLOATS else np.ones(idx.shape, dtype.np)
    expected = accumulate_reference(a, grid(idx, 0), src, dtype)
    got = ember.scatter_add(ember.from_numpy(a), 0, ember.from_numpy(idx), ember.from_numpy(src))
    check(got, expected, dtype)


def test_scatter_add_half_accumulates_in_float32():
    # 4096 adds of 0.1 into one float16: rounding after every add would stall at 256.
    out = ember.scatter_add(
        ember.zeros(1, dtype=ember.float16), 0, ember.zeros(4096, dtype=ember.int64),
        ember.full((4096,), 0.1, dtype=ember.float16),
    )  # fmt: skip
    assert abs(float(out[0]) - 409.5) < 0.5


def test_scatter_scalar_src_and_errors():
    x = ember.zeros(2, 3)
    got = ember.scatter(x, 1, ember.tensor([[2], [0]]), 5.0)
    check(got, np.array([[0, 0, 5], [5, 0, 0]], np.float32), ember.float32)
    with pytest.raises(IndexError, match=r"scatter.*index 3 .*dim 1 with size 3"):
        ember.scatter(x, 1, ember.tensor([[3]]), 1.0)
    with pytest.raises(IndexError, match=r"scatter_add.*index -1 "):
        ember.scatter_add(x, 0, ember.tensor([[-1, 0]]), ember.ones(1, 2))
    with pytest.raises(RuntimeError, match="smaller size than src"):
        ember.scatter(x, 0, ember.tensor([[0, 1, 1]]), ember.ones(1, 2))
    with pytest.raises(IndexError, match=r"gather.*index 2 is out of bounds for dim 0 with size 2"):
        ember.gather(x, 0, ember.tensor([[0, 2]]))


# ---- index_select / index_add ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_select(dtype, dim, layouts):
    a = sample((4, 5, 40), dtype)  # rows of 40 elements take the row-copy path for dim < 2
    idx = np.array([3, 0, 0, 2, 1, 3])[: a.shape[dim] + 1] % a.shape[dim]
    expected = np.take(a, idx, axis=dim)
    for t in layouts(a).values():
        for i in layouts(idx).values():
            check(ember.index_select(t, dim, i), expected, dtype)


def test_index_select_edges():
    a = sample((50_000, 3), ember.float32)
    idx = np.random.default_rng(9).integers(0, 50_000, 60_000)
    check(ember.index_select(ember.from_numpy(a), 0, ember.from_numpy(idx)), a[idx], ember.float32)
    wide = sample((300, 256), ember.float64)  # 2 KiB rows
    rows = np.random.default_rng(10).integers(0, 300, 500)
    check(
        ember.index_select(ember.from_numpy(wide), 0, ember.from_numpy(rows)),
        wide[rows],
        ember.float64,
    )
    empty = ember.index_select(ember.from_numpy(a), 1, ember.zeros(0, dtype=ember.int64))
    assert empty.shape == (50_000, 0)
    check(ember.index_select(ember.tensor(7), 0, ember.tensor([0])), np.array(7), ember.int64)
    with pytest.raises(IndexError, match="only 1 value"):
        ember.index_select(ember.tensor(7), 0, ember.tensor([0, 0]))
    with pytest.raises(
        IndexError, match=r"index_select.*index 3 is out of bounds for dim 1 with size 3"
    ):
        ember.index_select(ember.from_numpy(a), 1, ember.tensor([0, 3]))
    with pytest.raises(IndexError, match=r"index -1 "):
        ember.index_select(ember.from_numpy(a), 0, ember.tensor([-1]))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1])
def test_index_add(dtype, dim, layouts):
    a = sample((5, 70), dtype)
    idx = np.array([4, 0, 4, 2, 0, 0])  # repeats
    source = sample((6, 70) if dim == 0 else (5, 6), dtype, seed=11)
    alpha = 1 if dtype is ember.bool else (2.5 if dtype in FLOATS else 3)
    if dtype in FLOATS:
        scaled = source.astype(np.float64) * alpha
    else:
        scaled = (source.astype(np.int64) * alpha).astype(dtype.np)  # wraps like the kernel
    where = (idx, slice(None)) if dim == 0 else (slice(None), idx)
    expected = accumulate_reference(a, where, scaled, dtype)
    for t in layouts(a).values():
        for s in layouts(source).values():
            check(ember.index_add(t, dim, ember.from_numpy(idx), s, alpha=alpha), expected, dtype)


def test_index_add_errors_and_large():
    x = ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match="index_add"):
        ember.index_add(x, 0, ember.tensor([0, 1]), ember.ones(3, 4))
    with pytest.raises(
        IndexError, match=r"index_add.*index 3 is out of bounds for dim 0 with size 3"
    ):
        ember.index_add(x, 0, ember.tensor([3]), ember.ones(1, 4))
    a = np.zeros((4, 60_000), np.float32)
    idx = np.random.default_rng(12).integers(0, 4, 9)
    src = sample((9, 60_000), ember.float32, seed=13)
    expected = accumulate_reference(a, (idx,), src, ember.float32)
    got = ember.index_add(ember.from_numpy(a), 0, ember.from_numpy(idx), ember.from_numpy(src))
    check(got, expected, ember.float32)


# ---- take / put_ -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_take(dtype, layouts):
    a = sample((4, 6), dtype)
    idx = np.array([[0, -1, 23], [5, -24, 7]])
    expected = np.take(a.reshape(-1), idx)
    for t in layouts(a).values():
        for i in layouts(idx).values():
            check(ember.take(t, i), expected, dtype)
    check(
        ember.take(ember.from_numpy(a), ember.zeros(0, dtype=ember.int64)), a.reshape(-1)[:0], dtype
    )
    check(
        ember.take(ember.from_numpy(np.array(a[0, 0])), ember.tensor([0, -1])),
        a.reshape(-1)[[0, 0]],
        dtype,
    )


def test_take_large_and_errors():
    a = sample((300, 400), ember.int32)
    idx = np.random.default_rng(14).integers(-120_000, 120_000, (200, 250))
    view = ember.from_numpy(np.ascontiguousarray(a.T).T[::-1])  # non-contiguous, negative
    check(ember.take(view, ember.from_numpy(idx)), np.take(a[::-1].reshape(-1), idx), ember.int32)
    with pytest.raises(IndexError, match=r"take.*index 120000 is out of range for 120000 elements"):
        ember.take(view, ember.tensor([5, 120_000]))
    with pytest.raises(IndexError, match=r"take.*index -120001 "):
        ember.take(view, ember.tensor([-120_001]))


def put_reference(a, idx, src, accumulate, dtype):
    flat = a.reshape(-1).copy()
    if accumulate:
        return accumulate_reference(flat, (idx.reshape(-1),), src.reshape(-1), dtype).reshape(
            a.shape
        )
    flat[idx.reshape(-1)] = src.reshape(-1)
    return flat.reshape(a.shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("accumulate", [False, True])
def test_put(dtype, accumulate, layouts):
    a = sample((4, 6), dtype)
    idx = (
        np.array([[0, -1, 13], [5, -24, 7]])
        if not accumulate
        else np.array([[0, -1, 3], [0, 23, 0]])
    )
    src = sample(idx.shape, dtype, seed=15)
    expected = put_reference(a, idx, src, accumulate, dtype)
    for t in layouts(a).values():
        for s in layouts(src).values():
            x = t.clone() if t.is_contiguous() else t.t().clone().t()
            assert x.put_(ember.from_numpy(idx), s, accumulate=accumulate) is x
            check(x, expected, dtype)


def test_put_into_views():
    base = ember.zeros(3, 4, 5)
    view = base.permute(2, 0, 1)[1:4]  # permuted and offset, any strides
    logical = np.zeros((3, 3, 4), np.float32)
    idx = np.array([0, 7, -1, 20, 7])
    src = np.array([1, 2, 3, 4, 5], np.float32)
    view.put_(ember.from_numpy(idx), ember.from_numpy(src), accumulate=True)
    expected = put_reference(logical, idx, src, True, ember.float32)
    check(view, expected, ember.float32)
    reference_base = np.zeros((3, 4, 5), np.float32)
    reference_base.transpose(2, 0, 1)[1:4] = expected
    check(base, reference_base, ember.float32)
    # Broadcast source (stride 0) and a bad index, which must leave x untouched.
    x = ember.arange(6.0)
    x.put_(ember.tensor([1, 3]), ember.tensor(9.0).expand(2))
    check(x, np.array([0, 9, 2, 9, 4, 5], np.float32), ember.float32)
    with pytest.raises(IndexError, match=r"put_.*index 6 is out of range for 6 elements"):
        x.put_(ember.tensor([0, 6]), ember.tensor([-1.0, -1.0]))
    check(x, np.array([0, 9, 2, 9, 4, 5], np.float32), ember.float32)


@pytest.mark.parametrize("dtype", [ember.float16, ember.float32, ember.int64], ids=str)
def test_put_large(dtype):
    rng = np.random.default_rng(16)
    a = sample((200, 300), dtype)
    idx = rng.permutation(60_000)[:BIG]
    src = sample((BIG,), dtype, seed=17)
    t = ember.from_numpy(a.T.copy()).t()
    t.put_(ember.from_numpy(idx), ember.from_numpy(src))
    check(t, put_reference(a, idx, src, False, dtype), dtype)
    dup = rng.integers(0, 50, BIG)
    t = ember.from_numpy(a.copy())
    t.put_(ember.from_numpy(dup), ember.from_numpy(src), accumulate=True)
    check(t, put_reference(a, dup, src, True, dtype), dtype)


# ---- nonzero and decompositions ------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nonzero(dtype, layouts):
    a = sample((5, 6, 3), dtype)
    if dtype is not ember.bool:
        a[np.abs(a.astype(np.float64)) < 0.6] = 0
    if dtype in FLOATS:
        a[0, 0, 0], a[0, 0, 1] = np.nan, -0.0  # NaN counts, -0.0 does not
    for t in layouts(a).values():
        got = ember.nonzero(t)
        assert got.dtype is ember.int64
        np.testing.assert_array_equal(got.numpy(), np.argwhere(a))
    assert ember.nonzero(ember.zeros(3, 0)).shape == (0, 2)
    assert ember.nonzero(ember.tensor(0.0)).shape == (0, 0)
    assert ember.nonzero(ember.tensor(2.0)).shape == (1, 0)


@pytest.mark.parametrize("shape", [(100_000,), (300, 7, 50), (2, 40_000)])
def test_nonzero_parallel(shape, layouts):
    a = sample(shape, ember.float32) > 0.3
    for t in layouts(a).values():
        np.testing.assert_array_equal(ember.nonzero(t).numpy(), np.argwhere(a))
    assert ember.nonzero(ember.from_numpy(a).expand(3, *shape)).shape[0] == 3 * a.sum()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_select(dtype, layouts):
    a = sample((40, 30), dtype)
    mask = sample((40, 30), ember.bool, seed=18)
    for t in layouts(a).values():
        check(ember.masked_select(t, ember.from_numpy(mask)), a[mask], dtype)
    row = sample((30,), ember.bool, seed=19)  # broadcast mask
    expected = a[np.broadcast_to(row, a.shape)]
    check(ember.masked_select(ember.from_numpy(a), ember.from_numpy(row)), expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique(dtype):
    a = sample((50, 20), dtype)
    values, inverse, counts = ember.unique(
        ember.from_numpy(a).t(), return_inverse=True, return_counts=True
    )
    ref, ref_inverse, ref_counts = np.unique(a.T, return_inverse=True, return_counts=True)
    check(values, ref, dtype)
    np.testing.assert_array_equal(inverse.numpy(), ref_inverse.reshape(a.T.shape))
    np.testing.assert_array_equal(counts.numpy(), ref_counts)
    assert ember.unique(ember.zeros(0, dtype=dtype)).shape == (0,)


@pytest.mark.parametrize("dtype", [ember.bool, ember.int8, ember.bfloat16, ember.float64], ids=str)
def test_tensor_indexing(dtype, layouts):
    a = sample((6, 7, 8), dtype)
    t = ember.from_numpy(a.copy())
    idx = np.array([5, 0, -1, 2])
    check(t[ember.from_numpy(idx)], a[idx], dtype)
    check(t[:, ember.from_numpy(idx)], a[:, idx], dtype)
    check(t[ember.tensor([1, 2]), :, ember.tensor([[0], [3]])], a[[1, 2], :, [[0], [3]]], dtype)
    mask = sample((6, 7), ember.bool, seed=20)
    check(t[ember.from_numpy(mask)], a[mask], dtype)
    flipped = layouts(a)["flipped"]  # negative strides
    check(flipped[ember.from_numpy(idx)], a[idx], dtype)
    check(flipped[ember.from_numpy(mask)], a[mask], dtype)


@pytest.mark.parametrize("dtype", [ember.bool, ember.int32, ember.float16, ember.float32], ids=str)
def test_tensor_index_assignment(dtype):
    a = sample((6, 7, 8), dtype)
    value = sample((8,), dtype, seed=21)
    expected = a.copy()
    t = ember.from_numpy(a.copy())
    expected[[0, 4]] = value
    t[ember.tensor([0, 4])] = ember.from_numpy(value)
    check(t, expected, dtype)
    mask = sample((6, 7), ember.bool, seed=22)
    expected[mask] = value[0]
    t[ember.from_numpy(mask)] = value[0].item()
    check(t, expected, dtype)
    expected[:, [1, -1], 2] = value[:2]
    t[:, ember.tensor([1, -1]), 2] = ember.from_numpy(value[:2])
    check(t, expected, dtype)


def test_indexing_large_and_errors():
    a = sample((BIG, 3), ember.float32)
    t = ember.from_numpy(a.copy())
    mask = a[:, 0] > 0
    check(t[ember.from_numpy(mask)], a[mask], ember.float32)
    idx = np.random.default_rng(23).permutation(BIG)
    t[ember.from_numpy(idx)] = ember.from_numpy(a)
    expected = a.copy()
    expected[idx] = a
    check(t, expected, ember.float32)
    with pytest.raises(IndexError):
        t[ember.tensor([BIG])]
    assert math.prod(t[ember.zeros(0, dtype=ember.int64)].shape) == 0
