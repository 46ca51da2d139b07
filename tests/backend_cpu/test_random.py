"""The CPU Philox kernels against docs/random.md.

``spec_*`` below transcribe the spec in numpy; uniform and integer fills must match them bit for
bit, normal fills to within the accuracy of log/sin/cos. Then: Random123's known answers,
reproducibility, statistics, strided outputs, every dtype, and the random composites.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from ember_backend_cpu._kernels import ffi, lib

import ember

FLOATS = [ember.float16, ember.bfloat16, ember.float32, ember.float64]
ALL = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, *FLOATS]
NP = {ember.bfloat16: ml_dtypes.bfloat16}
MASK = np.uint64(0xFFFFFFFF)


def np_dtype(dtype):
    return NP.get(dtype, dtype.np)


# ---- the spec in numpy ---------------------------------------------------------------------------
def spec_philox(counters, k0: int, k1: int) -> np.ndarray:
    """Philox4x32-10 of 4 rows of 32-bit counter words (uint64 arrays) -> 4 rows of words."""
    x = list(counters)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * x[0]
        p1 = np.uint64(0xCD9E8D57) * x[2]
        hi0, hi1 = p0 >> np.uint64(32), p1 >> np.uint64(32)
        x = [hi1 ^ x[1] ^ np.uint64(k0), p1 & MASK, hi0 ^ x[3] ^ np.uint64(k1), p0 & MASK]
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return np.stack(x)


def spec_blocks(seed: int, offset: int, count: int) -> np.ndarray:
    """The words of blocks offset .. offset + count - 1 under ``seed``: shape (4, count)."""
    blk = np.uint64(offset) + np.arange(count, dtype=np.uint64)
    zero = np.zeros_like(blk)
    return spec_philox(
        [blk & MASK, blk >> np.uint64(32), zero, zero], seed & 0xFFFFFFFF, seed >> 32
    )


def spec_draws(seed: int, offset: int, n: int, wide: bool) -> np.ndarray:
    """One draw per element: 32-bit words (4 per block) or 64-bit draws (2 per block)."""
    per = 2 if wide else 4
    x = spec_blocks(seed, offset, -(-n // per))
    if wide:
        x = np.stack([x[0] | (x[1] << np.uint64(32)), x[2] | (x[3] << np.uint64(32))])
    return x.T.reshape(-1)[:n]


def spec_uniform(seed, offset, n, dtype, low, high):
    from ember_backend_cpu.kernels.random import below

    wide = dtype is ember.float64
    d = spec_draws(seed, offset, n, wide)
    clamp = below(high, dtype.code) if low < high else math.inf
    if wide:
        v = (d >> np.uint64(11)).astype(np.float64) * 2.0**-53 * (high - low) + low
        return np.minimum(v, clamp)
    f32 = np.float32
    u = (d >> np.uint64(8)).astype(f32) * f32(2.0**-24)
    v = f32(low) + u * (f32(high) - f32(low))
    return np.minimum(v, f32(clamp)).astype(np_dtype(dtype))


def spec_normal(seed, offset, n, dtype, mean, std):
    if dtype is ember.float64:
        w = spec_blocks(seed, offset, -(-n // 2))
        w0, w1 = w[0] | (w[1] << np.uint64(32)), w[2] | (w[3] << np.uint64(32))
        u1 = ((w0 >> np.uint64(11)).astype(np.float64) + 1) * 2.0**-53
        u2 = (w1 >> np.uint64(11)).astype(np.float64) * 2.0**-53
        t = 6.283185307179586 * u2
    else:
        x = spec_blocks(seed, offset, -(-n // 4)).T.reshape(-1, 2)
        f32 = np.float32
        u1 = ((x[:, 0] >> np.uint64(8)).astype(f32) + f32(1)) * f32(2.0**-24)
        u2 = (x[:, 1] >> np.uint64(8)).astype(f32) * f32(2.0**-24)
        t = f32(6.2831855) * u2
        mean, std = f32(mean), f32(std)
    r = np.sqrt(-2 * np.log(u1))
    z = np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)[:n]
    return (mean + std * z).astype(np_dtype(dtype))


def spec_random(seed, offset, n, dtype, low, high):
    span = (high - low) % (1 << 64)
    wide = dtype is ember.float64 or span == 0 or span > 1 << 32
    d = spec_draws(seed, offset, n, wide)
    off = d % np.uint64(span) if span else d
    value = (np.uint64(low % (1 << 64)) + off).view(np.int64)
    return value.astype(np_dtype(dtype))


def per_block(dtype, wide=False) -> int:
    return 2 if dtype is ember.float64 or wide else 4


# ---- known answers -------------------------------------------------------------------------------
KAT = [
    ((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0xA4093822, 0x299F31D0),
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("key", "ctr", "expected"), KAT)
def test_philox_known_answers(key, ctr, expected):
    out = ffi.new("uint32_t[4]")
    lib.ember_philox4x32_10(ctr, key, out)
    assert tuple(out) == expected


@pytest.mark.parametrize(("key", "ctr", "expected"), KAT)
def test_numpy_transcription_known_answers(key, ctr, expected):
    got = spec_philox([np.array([c], np.uint64) for c in ctr], *key)[:, 0]
    assert tuple(int(v) for v in got) == expected


# ---- the kernels against the spec ----------------------------------------------------------------
SEED = (7 << 32) | 12345  # both key words non-zero
N = 70_001  # not a multiple of 4, several OpenMP chunks, above the parallel threshold


def fill(dtype, method, *args, n=N, seed=SEED, skip=0):
    """A fresh generator at ``seed``, ``skip`` blocks consumed, then ``out.method(*args)``."""
    g = ember.Generator().manual_seed(seed)
    if skip:
        g.take(skip)
    return getattr(ember.empty((n,), dtype=dtype), method)(*args, generator=g).numpy()


def assert_bits_equal(got, want):
    assert got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), np.flatnonzero(got != want)[:5]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(("low", "high"), [(0.0, 1.0), (-3.0, 5.5), (1e-3, 2e-3)])
def test_uniform_matches_spec(dtype, low, high):
    got = fill(dtype, "uniform_", low, high, skip=5)
    assert_bits_equal(got, spec_uniform(SEED, 5, N, dtype, low, high))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_normal_matches_spec(dtype):
    got = fill(dtype, "normal_", 1.5, 2.0, skip=3).astype(np.float64)
    want = spec_normal(SEED, 3, N, dtype, 1.5, 2.0).astype(np.float64)
    # log/sin/cos differ by an ulp or so between libm and numpy; after rounding to half
    # precision that can be one ulp of the output.
    eps = {ember.float16: 2e-3, ember.bfloat16: 1.6e-2, ember.float32: 4e-6, ember.float64: 1e-13}
    np.testing.assert_allclose(got, want, rtol=eps[dtype], atol=eps[dtype])


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_random_matches_spec(dtype):
    low, high = (0, 2) if dtype is ember.bool else (-7, 100)
    if dtype is ember.uint8:
        low = 3
    got = fill(dtype, "random_", low, high, skip=9)
    assert_bits_equal(got, spec_random(SEED, 9, N, dtype, low, high))


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (0, 1 << 32),
        (5, (1 << 32) + 6),
        (0, 1 << 40),
        (-(1 << 63), (1 << 63) - 1),
        (-(1 << 63), 1 << 63),
    ],
)
def test_random_wide_ranges(low, high):
    got = fill(ember.int64, "random_", low, high, n=1001)
    assert_bits_equal(got, spec_random(SEED, 0, 1001, ember.int64, low, high))


def test_offset_advances_by_blocks_consumed():
    g = ember.Generator().manual_seed(SEED)
    for dtype, n, method, args in [
        (ember.float32, 10, "uniform_", ()),
        (ember.float64, 7, "normal_", ()),
        (ember.int64, 5, "random_", (0, 1 << 40)),
        (ember.int32, 3, "random_", (0, 10)),
    ]:
        before = g.get_offset()
        getattr(ember.empty((n,), dtype=dtype), method)(*args, generator=g)
        wide = method == "random_" and args[1] > 1 << 32
        assert g.get_offset() - before == -(-n // per_block(dtype, wide))
    # The next call starts where the last one stopped: nothing is reused.
    offset = g.get_offset()
    got = ember.empty((8,), dtype=ember.float32).uniform_(generator=g).numpy()
    assert_bits_equal(got, spec_uniform(SEED, offset, 8, ember.float32, 0.0, 1.0))


def test_high_offset_carries_into_the_second_counter_word():
    g = ember.Generator().manual_seed(SEED)
    g.take((1 << 32) - 1)  # the fill crosses block 2^32
    got = ember.empty((16,), dtype=ember.float32).uniform_(generator=g).numpy()
    assert_bits_equal(got, spec_uniform(SEED, (1 << 32) - 1, 16, ember.float32, 0.0, 1.0))


@pytest.mark.parametrize("threads", [1, 3])
def test_independent_of_thread_count(threads):
    before = lib.ember_num_threads()
    want = fill(ember.float32, "normal_")
    try:
        lib.ember_set_num_threads(threads)
        got = fill(ember.float32, "normal_")
    finally:
        lib.ember_set_num_threads(before)
    assert_bits_equal(got, want)


# ---- the public API ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda: ember.rand(1000),
        lambda: ember.randn(10, 10),
        lambda: ember.randint(-5, 5, (1000,)),
        lambda: ember.rand(33, dtype=ember.float64),
    ],
    ids=["rand", "randn", "randint", "rand64"],
)
def test_manual_seed_reproduces(make):
    ember.manual_seed(1234)
    first, second = make().numpy(), make().numpy()
    ember.manual_seed(1234)
    again = make().numpy()
    assert np.array_equal(first, again)
    assert not np.array_equal(first, second)


def test_seeds_differ():
    ember.manual_seed(1)
    a = ember.rand(100).numpy()
    ember.manual_seed(2)
    b = ember.rand(100).numpy()
    ember.manual_seed(1 << 32 | 1)  # differs only in the high key word
    c = ember.rand(100).numpy()
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, c)


def chi_square(counts, expected) -> float:
    return float(((counts - expected) ** 2 / expected).sum())


# With k - 1 degrees of freedom the statistic has mean k - 1 and sd sqrt(2 (k - 1)); the seeds are
# fixed, so a bound of mean + 6 sd only catches real defects.
def chi_bound(bins: int) -> float:
    return bins - 1 + 6 * math.sqrt(2 * (bins - 1))


M = 1_000_000


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_uniform_statistics(dtype):
    ember.manual_seed(2024)
    x = ember.rand(M, dtype=dtype).numpy().astype(np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 5 / math.sqrt(12 * M)
    assert abs(x.std() - math.sqrt(1 / 12)) < 1e-3
    counts = np.histogram(x, bins=100, range=(0, 1))[0]
    assert chi_square(counts, M / 100) < chi_bound(100)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_normal_statistics(dtype):
    ember.manual_seed(2025)
    x = ember.randn(M, dtype=dtype).numpy().astype(np.float64)
    assert abs(x.mean()) < 5 / math.sqrt(M)
    assert abs(x.std() - 1) < 5e-3
    edges = np.linspace(-4, 4, 41)
    cdf = np.array([0.5 * (1 + math.erf(e / math.sqrt(2))) for e in edges])
    counts = np.histogram(x, bins=edges)[0]
    keep = np.diff(cdf) * M > 50
    assert chi_square(counts[keep], np.diff(cdf)[keep] * M) < chi_bound(int(keep.sum()))


def test_randint_statistics():
    ember.manual_seed(2026)
    x = ember.randint(-3, 7, (M,)).numpy()
    assert x.min() == -3 and x.max() == 6
    assert chi_square(np.bincount(x + 3), M / 10) < chi_bound(10)


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
def test_half_precision_statistics(dtype):
    ember.manual_seed(2027)
    u = ember.rand(M, dtype=dtype).numpy().astype(np.float64)
    z = ember.randn(M, dtype=dtype).numpy().astype(np.float64)
    assert u.max() < 1.0  # rounding up to 1.0 is clamped away
    assert abs(u.mean() - 0.5) < 2e-3 and abs(u.std() - math.sqrt(1 / 12)) < 2e-3
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 1e-2


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    ("low", "high"), [(1.0, 1.0 + 1e-7), (0.0, 1e-30), (-1.0, -0.999), (-1e-3, 0.0)]
)
def test_uniform_stays_below_high(dtype, low, high):
    x = ember.empty((4096,), dtype=dtype).uniform_(low, high).numpy().astype(np.float64)
    assert (x < high).all()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("high", [1.0, 0.0, -1.0, 3.0000001, -1e-30, 1e-30, 1e5, 1e300, math.inf])
def test_clamp_is_the_largest_value_below_high(dtype, high):
    from ember_backend_cpu.kernels.random import below

    t = np.dtype(np_dtype(dtype)).type
    h = t(below(high, dtype.code))
    assert float(h) == below(high, dtype.code)  # representable in the dtype
    assert float(h) < high
    with np.errstate(over="ignore"):
        assert float(np.nextafter(h, t(np.inf))) >= high  # the next value up is not below high


def test_uniform_empty_range_gives_low():
    x = ember.empty((100,), dtype=ember.float32).uniform_(2.5, 2.5).numpy()
    assert (x == 2.5).all()


# ---- layouts -------------------------------------------------------------------------------------
def logical_fill(out, seed=99):
    """Fill ``out`` in place with uniform_ and return it in logical order as numpy."""
    out.uniform_(generator=ember.Generator().manual_seed(seed))
    return out.contiguous().numpy()


@pytest.mark.parametrize(
    "view",
    [
        lambda: ember.empty((300, 200)).t(),
        lambda: ember.empty((40, 60))[:, ::3],
        lambda: ember.empty((5, 6, 7)).permute(2, 0, 1),
        lambda: ember.from_numpy(np.zeros(1000, np.float32)[::-1]),
        lambda: ember.from_numpy(np.zeros((300, 400), np.float32)[::-1, ::2]),
    ],
    ids=["transposed", "column-slice", "permuted", "negative", "negative-2d"],
)
def test_strided_output_matches_contiguous(view):
    out = view()
    got = logical_fill(out)
    want = logical_fill(ember.empty(tuple(out.shape)))
    assert_bits_equal(got, want)


def test_strided_fill_leaves_the_gaps_alone():
    base = ember.zeros(10, 6)
    base[:, ::2].normal_()
    assert (base.numpy()[:, 1::2] == 0).all()


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5, 2)])
def test_empty_outputs(shape):
    g = ember.Generator().manual_seed(0)
    assert ember.rand(shape, generator=g).shape == shape
    assert ember.randint(0, 3, shape, generator=g).shape == shape
    assert g.get_offset() == 0


def test_one_element():
    x = fill(ember.float32, "uniform_", n=1)
    assert_bits_equal(x, spec_uniform(SEED, 0, 1, ember.float32, 0.0, 1.0))


# ---- every dtype ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_random_default_bounds(dtype):
    x = ember.empty((4096,), dtype=dtype).random_().numpy()
    if dtype is ember.bool:
        assert set(np.unique(x)) == {False, True}
        return
    values = x.astype(np.float64)
    assert values.min() >= 0
    assert (values == np.round(values)).all()
    if dtype.category != ember.float32.category:
        assert values.max() <= np.iinfo(dtype.np).max


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_dtypes_fill(dtype):
    assert ember.rand(100, dtype=dtype).dtype is dtype
    assert ember.randn(100, dtype=dtype).dtype is dtype


@pytest.mark.parametrize("dtype", [ember.bool, *ALL[1:6]], ids=str)
def test_uniform_and_normal_reject_integers(dtype):
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.empty((3,), dtype=dtype).uniform_()
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.empty((3,), dtype=dtype).normal_()


# ---- composites over these kernels ---------------------------------------------------------------
def run_composite(fn, *args):
    """Run a composite over these kernels (and the sort/scan kernels it decomposes into)."""
    return fn(*args)


def test_bernoulli():
    ember.manual_seed(5)
    p = ember.full((M,), 0.3)
    x = ember.bernoulli(p).numpy()
    assert set(np.unique(x)) == {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 5 * math.sqrt(0.21 / M)


def test_randperm():
    ember.manual_seed(6)
    x = run_composite(ember.randperm, 1000).numpy()
    assert np.array_equal(np.sort(x), np.arange(1000))
    assert not np.array_equal(x, np.arange(1000))


@pytest.mark.parametrize("replacement", [True, False])
def test_multinomial(replacement):
    ember.manual_seed(7)
    probs = ember.tensor([[0.1, 0.0, 0.6, 0.3]] * 2)
    picks = run_composite(ember.multinomial, probs, 2000 if replacement else 3, replacement).numpy()
    assert picks.shape == ((2, 2000) if replacement else (2, 3))
    assert not (picks == 1).any()  # zero probability is never drawn
    if replacement:
        freq = np.bincount(picks.reshape(-1), minlength=4) / picks.size
        np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.03)
    else:
        assert all(len(set(row)) == 3 for row in picks.tolist())
