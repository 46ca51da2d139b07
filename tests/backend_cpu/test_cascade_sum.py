"""The float32 sum's cascade (csrc/cascade.h) where a cascade could go wrong.

Contiguous float32 runs add in float lanes: 32 lanes, 3 levels of 4 additions, blocks of 2048
elements handed to double. The cases: every length around those boundaries, in every layout
that reaches the kernel as a contiguous run (all elements, the last dim, trailing dims merged,
pieces of a split reduction that start inside a row); long constant runs (a single float
chain stops growing at 2^24); alternating magnitudes and cancellation; against PyTorch's sum.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember

# Lengths around the lane width (32), the levels (128, 512 elements) and the block (2048).
LENGTHS = [1, 15, 16, 31, 32, 33, 127, 128, 129, 511, 513, 2047, 2048, 2049, 6143, 49157]
U = 2.0**-24  # float32's unit roundoff
ROUNDINGS = 12  # float additions an element goes through: 3 levels of 4


def _ints(shape, seed):
    """Integer-valued float32: every partial sum is exact, so any dropped, doubled or misplaced
    element shows as an exact mismatch."""
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(np.float32)


def _exact(a, axis=None):
    return a.astype(np.float64).sum(axis=axis)


@pytest.mark.parametrize("n", LENGTHS)
def test_every_length_exact(n):
    a = _ints(n, n)
    assert ember.sum(ember.from_numpy(a)).item() == _exact(a)
    m = _ints((3, n), n + 1)
    np.testing.assert_array_equal(ember.sum(ember.from_numpy(m), -1).numpy(), _exact(m, -1))
    np.testing.assert_array_equal(
        ember.mean(ember.from_numpy(m), -1).numpy(), (_exact(m, -1) / n).astype(np.float32)
    )


@pytest.mark.parametrize(
    "shape, dims",
    [
        ((5, 7, 4099), (1, 2)),  # trailing dims merged into one run per output
        ((3, 70001), None),  # split into pieces that start inside a row
        ((20, 33333), None),  # many rows, pieces across rows
        ((16, 70001), 1),  # few outputs, each row split into pieces
        ((64, 40000), 1),  # enough outputs that each folds its whole row
        ((2, 3, 50000), (0, 2)),  # a reduced outer dim around contiguous runs
    ],
)
def test_layouts_exact(shape, dims):
    a = _ints(shape, len(shape))
    np.testing.assert_array_equal(ember.sum(ember.from_numpy(a), dims).numpy(), _exact(a, dims))


def test_long_constant_runs():
    """Ones past 2^24 (a float chain stalls at 16777216) and 0.1, whose rounding accumulates."""
    n = (1 << 24) + 4100  # even: a float32
    ones = np.ones(n, np.float32)
    assert ember.sum(ember.from_numpy(ones)).item() == n
    assert ember.sum(ember.from_numpy(ones.reshape(1, n)), 1).item() == n
    tenths = np.full(3_000_017, 0.1, np.float32)
    exact = _exact(tenths)
    ours = ember.sum(ember.from_numpy(tenths)).item()
    assert abs(ours - exact) <= abs(float(np.sum(tenths)) - exact)
    assert abs(ours - exact) <= np.spacing(np.float32(exact)) / 2


def test_alternating_magnitudes():
    """Huge elements that cancel between tiny ones (a float chain absorbs the tiny ones: numpy's
    and PyTorch's sums lose 25% to 100% of this one; the lanes keep huge and tiny apart), and
    magnitudes spread over 8 decades with random signs: within the cascade's bound of 12
    roundings of sum(|x|), and over 16 draws no less accurate than PyTorch (root-mean-square)."""
    tiles = np.tile(np.array([1e6, -1e-2, -1e6, 3e-2], np.float32), (8, 5001))
    for dims in (None, 1):
        exact = _exact(tiles, dims)
        ours = ember.sum(ember.from_numpy(tiles), dims).numpy().astype(np.float64)
        assert np.all(np.abs(ours - exact) <= np.spacing(np.float32(exact)))
    # One sum's error is a random walk, so one draw against PyTorch's is a coin flip (and
    # PyTorch's own result moves with its thread count): compare root-mean-square errors over
    # 16 draws, PyTorch on one thread.
    ours_err, theirs_err = [], []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for seed in range(16):
            rng = np.random.default_rng(seed)
            n = 1_000_003
            spread = (rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-4, 4, n)).astype(np.float32)
            exact = _exact(spread)
            ours = ember.sum(ember.from_numpy(spread)).item()
            assert abs(ours - exact) <= ROUNDINGS * U * _exact(np.abs(spread))
            ours_err.append(ours - exact)
            theirs_err.append(torch.from_numpy(spread).sum().item() - exact)
    finally:
        torch.set_num_threads(threads)
    assert np.sqrt(np.mean(np.square(ours_err))) <= np.sqrt(np.mean(np.square(theirs_err)))


@pytest.mark.parametrize("dims", [None, -1])
def test_against_torch(dims):
    """Random data: float32 like PyTorch's sum, and as accurate within one float32 ulp."""
    a = np.random.default_rng(7).standard_normal((37, 30011)).astype(np.float32) + 0.25
    ours = ember.sum(ember.from_numpy(a), dims).numpy()
    t = torch.from_numpy(a)
    theirs = (t.sum() if dims is None else t.sum(dims)).numpy()
    assert ours.dtype == theirs.dtype == np.float32 and ours.shape == theirs.shape
    exact = _exact(a, dims)
    ours_err = np.abs(ours.astype(np.float64) - exact)
    assert np.all(ours_err <= np.abs(theirs.astype(np.float64) - exact) + np.spacing(theirs))


# Sums of float32 runs in every layout that reaches the kernel, printed as their bits' hex.
_BITS_SCRIPT = """
import numpy as np, ember
a = np.random.default_rng(11).standard_normal((7, 9001)).astype(np.float32)
runs = [a[:, 3:], a, a.reshape(-1)[5:], a[:, : 2049 * 4].reshape(7, 4, 2049)]
sums = [ember.sum(ember.from_numpy(r), -1).numpy() for r in runs]
sums += [ember.sum(ember.from_numpy(a.reshape(-1)[: n])).numpy() for n in range(1, 300, 7)]
print(" ".join(np.ascontiguousarray(s).tobytes().hex() for s in sums))
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
    """The AVX-512 build (16-float vectors) and the AVX2/baseline clones' build (8-float vectors)
    add the same lanes in the same order. EMBER_CPU_AVX512=0 takes the narrow build."""

    def bits(**env):
        run = subprocess.run(
            [sys.executable, "-c", _BITS_SCRIPT],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return run.stdout.split()

    wide, narrow = bits(), bits(EMBER_CPU_AVX512="0")
    assert len(wide) == len(narrow) > 40
    assert wide == narrow
