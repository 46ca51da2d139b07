"""Reduction and scan kernels of the CPU backend against numpy, in the same process.

Usage: ``python benchmarks/bench_reduce_kernels.py [--repeat N] [--filter TEXT]``

Each line: the case, ember's and numpy's best time over the repeats, and ember's speed relative to
numpy (above 1: ember is faster). Sizes are those of the performance targets (16M elements,
4096x4096). On a machine shared with other work, compare OMP_NUM_THREADS=1 runs too: a second
thread that the OS deschedules makes parallel times noisy.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

import ember


def _best_times(fns, repeat: int, rounds: int = 3) -> list[float]:
    """Best time of each function: `rounds` rounds of `repeat` back-to-back calls of each (back
    to back, so OpenMP threads are still awake, as in a loop of ops; rounds alternate so that
    all functions see the same machine load)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            fn()  # warm up: first-touch page faults, allocator cache, sleeping threads
            for _ in range(repeat):
                start = time.perf_counter()
                fn()
                best[i] = min(best[i], time.perf_counter() - start)
    return best


def _data(shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(0)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-100, 100, shape).astype(dtype)


# (label, shape, dtype, ember call, numpy call): calls take the ember tensor / numpy array.
CASES = [
    ("sum all", (1 << 24,), np.float32, lambda t: ember.sum(t), lambda a: np.sum(a)),
    ("sum all", (1 << 24,), np.float64, lambda t: ember.sum(t), lambda a: np.sum(a)),
    ("sum all", (1 << 24,), np.int32, lambda t: ember.sum(t), lambda a: np.sum(a)),
    ("sum dim=-1", (4096, 4096), np.float32, lambda t: t.sum(-1), lambda a: a.sum(-1)),
    ("sum dim=0", (4096, 4096), np.float32, lambda t: t.sum(0), lambda a: a.sum(0)),
    ("sum dim=-1", (1 << 20, 3), np.float32, lambda t: t.sum(-1), lambda a: a.sum(-1)),
    ("sum dim=0", (1 << 20, 8), np.float32, lambda t: t.sum(0), lambda a: a.sum(0)),
    (
        "sum dim=(0,2)",
        (64, 256, 1024),
        np.float32,
        lambda t: t.sum((0, 2)),
        lambda a: a.sum((0, 2)),
    ),
    ("sum .T dim=0", (4096, 4096), np.float32, lambda t: t.t().sum(0), lambda a: a.T.sum(0)),
    ("amax all", (1 << 24,), np.float32, lambda t: t.amax(), lambda a: a.max()),
    ("amax dim=0", (4096, 4096), np.float32, lambda t: t.amax(0), lambda a: a.max(0)),
    ("prod dim=-1", (4096, 4096), np.float32, lambda t: t.prod(-1), lambda a: a.prod(-1)),
    ("all dim=-1", (4096, 4096), np.float32, lambda t: t.all(-1), lambda a: a.all(-1)),
    ("max dim=-1", (4096, 4096), np.float32, lambda t: ember.max(t, -1), lambda a: a.max(-1)),
    ("argmax dim=-1", (4096, 4096), np.float32, lambda t: t.argmax(-1), lambda a: a.argmax(-1)),
    ("argmax dim=0", (4096, 4096), np.float32, lambda t: t.argmax(0), lambda a: a.argmax(0)),
    ("argmax all", (1 << 24,), np.float32, lambda t: t.argmax(), lambda a: a.argmax()),
    ("cumsum dim=-1", (4096, 4096), np.float32, lambda t: t.cumsum(-1), lambda a: a.cumsum(-1)),
    ("cumsum dim=0", (4096, 4096), np.float32, lambda t: t.cumsum(0), lambda a: a.cumsum(0)),
    ("cumsum all", (1 << 24,), np.float32, lambda t: t.cumsum(0), lambda a: a.cumsum(0)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--filter", default="", help="only cases whose label contains this")
    args = parser.parse_args()
    print(f"numpy {np.__version__}; ember threads: see EMBER_NUM_THREADS / OMP_NUM_THREADS")
    print(f"{'case':<16}{'shape':<18}{'dtype':<9}{'ember ms':>10}{'numpy ms':>10}{'speed':>8}")
    for label, shape, dtype, ember_fn, numpy_fn in CASES:
        if args.filter not in label:
            continue
        a = _data(shape, dtype)
        t = ember.from_numpy(a)
        ours, theirs = _best_times([partial(ember_fn, t), partial(numpy_fn, a)], args.repeat)
        name = np.dtype(dtype).name
        print(
            f"{label:<16}{shape!s:<18}{name:<9}{ours * 1e3:>10.3f}{theirs * 1e3:>10.3f}"
            f"{theirs / ours:>7.2f}x"
        )


if __name__ == "__main__":
    main()
