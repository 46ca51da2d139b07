"""Sums of contiguous float32/float64 runs (csrc/cascade.h) have PyTorch's bits.

cascade.h reproduces PyTorch's cascade_sum addition for addition, so with PyTorch on one thread
ember's sum, mean, nansum and sums over trailing dims equal PyTorch's bit for bit: every length
1..10K (around the 8-element vectors, the 32-element rows, the levels of 16 rows), runs starting
on a 64-byte line (the AVX-512 build) and past one (the 8-float build), long runs whose levels
carry up to the top (3M copies of 0.1, 2^20 rows where the level step grows to 32), random, NaN
and inf data. Ember's bits do not move with its thread count or its build, and its error against
math.fsum is PyTorch's. Integer-valued data checks the layouts that reach the kernel exactly.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember.utils.benchmark import _threads as ember_threads  # ember's thread count in a block

DTYPES = (np.float32, np.float64)


@pytest.fixture(autouse=True)
def torch_one_thread():
    """PyTorch splits a sum among its threads (and its bits move with them): one thread. Both
    libraries share libgomp's thread count, so tests that set ember's take PyTorch's results
    first."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _at(values: np.ndarray, offset: int) -> np.ndarray:
    """A copy of `values` starting `offset` bytes past a 64-byte line."""
    pad = 128 // values.itemsize
    raw = np.empty(values.size + pad, values.dtype)
    start = ((offset - raw.ctypes.data) % 64) // values.itemsize
    out = raw[start : start + values.size].reshape(values.shape)
    out[...] = values
    assert out.ctypes.data % 64 == offset
    return out


def _spread(n: int, dtype, seed: int) -> np.ndarray:
    """Random signs and magnitudes over 6 decades: every reordering of the additions shows."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)


def assert_bits(ours, theirs) -> None:
    """Same shape, dtype and bits; NaN where PyTorch has NaN (its payload aside)."""
    got, want = np.atleast_1d(ours.numpy()), np.atleast_1d(theirs.numpy())
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bad = (got != want) & ~nan | (np.signbit(got) != np.signbit(want)) & ~nan
    assert not bad.any(), f"at {np.argwhere(bad)[:5].tolist()}: {got[bad][:5]} != {want[bad][:5]}"


@pytest.mark.parametrize("lag", [0, 1, 2, 4])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_length_matches_torch(dtype, lag):
    """Sums of the first n elements, n = 1..10000, starting `lag` elements past a line."""
    base = _at(_spread(10_000, dtype, lag), lag * np.dtype(dtype).itemsize)
    ours, theirs = ember.from_numpy(base), torch.from_numpy(base)
    lengths = range(1, base.size + 1)
    assert_bits(
        ember.stack([ours[:n].sum() for n in lengths]),
        torch.stack([theirs[:n].sum() for n in lengths]),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_long_runs_match_torch_on_any_thread_count(dtype, threads):
    """Runs whose levels carry up to the top, threaded or not; 3M copies of 0.1 (all lanes
    round alike) among them. Each thread takes a contiguous share of the blocks and units, cut
    by rows: 7 threads cut them unevenly and leave some threads none (two tasks of a 70001-long
    float64 run)."""
    runs = [
        np.full(3_000_017, 0.1, dtype),
        _spread(3_000_017, dtype, 1),
        _spread(70_001, dtype, 2),  # threads over level-1 units only
        _spread(1_048_576 + 96 + 5, dtype, 3),  # whole blocks, units, leftover rows and elements
    ]
    runs = [_at(run, offset) for run in runs for offset in (0, 16)]
    theirs = [torch.from_numpy(x).sum() for x in runs]
    with ember_threads(threads):
        for x, want in zip(runs, theirs):
            assert_bits(ember.from_numpy(x).sum(), want)


def test_level_step_grows_past_2_20_rows():
    """At 2^20 rows (32 float32 each) and more, the level step is 32, not 16."""
    x = _spread((1 << 25) + 12_345, np.float32, 4)
    theirs = torch.from_numpy(x).sum()
    for threads in (1, 2):
        with ember_threads(threads):
            assert_bits(ember.from_numpy(x).sum(), theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", [1, 3])
def test_rows_and_means_match_torch(dtype, threads):
    """Sums and means over the last dim, over trailing dims merged, and over a transposed
    view's contiguous dim; row lengths around the vector, the row and the level step."""

    def results(lib, m):
        x = lib.from_numpy(m)
        cube = x.reshape(5, 1, -1)
        return [x.sum(-1), x.mean(-1), x.mean(), x.t().sum(0), cube.sum((1, 2))]

    for cols in (1, 3, 7, 8, 9, 31, 32, 33, 511, 512, 513, 4099, 70_001):
        m = _at(_spread(5 * cols, dtype, cols).reshape(5, cols), 16)
        theirs = results(torch, m)
        with ember_threads(threads):
            ours = results(ember, m)
        for got, want in zip(ours, theirs):
            assert_bits(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_inf_match_torch(dtype):
    """NaN, inf and inf - inf in the lanes, the leftover vectors and the leftover elements;
    nansum drops the NaNs before the same cascade."""
    for n in (5, 27, 1000, 100_003):
        for where in (0, n // 2, n - 1):
            x = _spread(n, dtype, n + where)
            x[where] = np.nan
            for fn in ("sum", "nansum"):
                ours = getattr(ember, fn)(ember.from_numpy(x))
                assert_bits(ours, getattr(torch, fn)(torch.from_numpy(x)))
            y = x.copy()
            y[where] = np.inf
            assert_bits(ember.from_numpy(y).sum(), torch.from_numpy(y).sum())
            y[(where + 1) % n] = -np.inf
            assert_bits(ember.from_numpy(y).sum(), torch.from_numpy(y).sum())


def test_error_against_fsum_is_torchs():
    """The same error as PyTorch's against the exact sum (math.fsum), on data where a float32
    sum errs: constant runs, magnitudes over 8 decades, and huge values cancelling between
    tiny ones (where PyTorch, and so ember, keeps little of the tiny ones)."""
    rng = np.random.default_rng(5)
    cases = [
        np.full(3_000_017, 0.1, np.float32),
        (rng.choice([-1.0, 1.0], 1_000_003) * 10.0 ** rng.uniform(-4, 4, 1_000_003)).astype(
            np.float32
        ),
        np.tile(np.array([1e6, -1e-2, -1e6, 3e-2], np.float32), 40_001),
    ]
    for x in cases:
        exact = math.fsum(x.astype(np.float64))
        ours = ember.from_numpy(x).sum().item()
        theirs = torch.from_numpy(x).sum().item()
        assert theirs != exact  # data where a float32 sum errs
        assert abs(ours - exact) <= abs(theirs - exact)


# ---- exactness in every layout that reaches the kernel ----------------------------------------
def _ints(shape, seed):
    """Integer-valued float32: every partial sum is exact, so any dropped, doubled or misplaced
    element shows as an exact mismatch."""
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float32)


def _exact(a, axis=None):
    return a.astype(np.float64).sum(axis=axis)


@pytest.mark.parametrize(
    "shape, dims",
    [
        ((5, 7, 4099), (1, 2)),  # trailing dims merged into one run per output
        ((3, 70001), None),  # one run, threaded inside the cascade
        ((20, 33333), None),  # one run of many rows
        ((16, 70001), 1),  # few outputs: one row at a time, each threaded
        ((64, 40000), 1),  # enough outputs that threads take rows
        ((2, 3, 50000), (0, 2)),  # a reduced outer dim around runs: pieces of whole runs
        ((4, 3, 5), (0, 2)),  # short runs, an outer dim
    ],
)
@pytest.mark.parametrize("threads", [1, 3])
def test_layouts_exact(shape, dims, threads):
    a = _ints(shape, len(shape))
    with ember_threads(threads):
        got = ember.sum(ember.from_numpy(a), dims).numpy()
    np.testing.assert_array_equal(got, _exact(a, dims))


# ---- the builds -------------------------------------------------------------------------------
def test_same_bits_at_any_alignment():
    """A run on a 64-byte line takes the AVX-512 build (where the CPU has it), the same run
    elsewhere the 8-float build: the same bits."""
    for n in (7, 100, 4099, 70_001, 3_000_017):
        x = _spread(n, np.float32, n)
        sums = {off: ember.from_numpy(_at(x, off)).sum().numpy() for off in (0, 4, 16, 32)}
        assert len({s.tobytes() for s in sums.values()}) == 1, sums


# Sums of runs on and off 64-byte lines, as their bits' hex.
_BITS_SCRIPT = """
import importlib.util, sys
import numpy as np, ember
spec = importlib.util.spec_from_file_location("cascade_tests", sys.argv[1])
tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tests)
_at, _spread = tests._at, tests._spread
sums = []
for dtype in (np.float32, np.float64):
    for n in (5, 100, 4099, 70_001, 1_000_003):
        for off in (0, 16):
            x = ember.from_numpy(_at(_spread(n, dtype, n), off))
            sums += [x.sum(), x[: n // 3 * 3].reshape(3, -1).sum(-1)]
print(" ".join(s.numpy().tobytes().hex() for s in sums))
"""


def _has_avx512() -> bool:
    try:
        with open("/proc/cpuinfo") as handle:
            return " avx512f" in handle.read()
    except OSError:
        return False


# Without AVX-512 both runs would take the narrow build and the comparison could not fail.
@pytest.mark.skipif(not _has_avx512(), reason="no AVX-512 here: only one build can run")
def test_same_bits_with_and_without_avx512():
    """EMBER_CPU_AVX512=0 takes the 8-float build for every run, aligned ones included."""

    def bits(**env):
        run = subprocess.run(
            [sys.executable, "-c", _BITS_SCRIPT, os.path.abspath(__file__)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return run.stdout.split()

    wide, narrow = bits(), bits(EMBER_CPU_AVX512="0")
    assert len(wide) == len(narrow) == 40
    assert wide == narrow
