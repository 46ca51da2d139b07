"""ember.mm against numpy's matmul, measured in the same process.

    python benchmarks/bench_matmul.py                    # float32, n = 256 .. 2048
    python benchmarks/bench_matmul.py --dtype float64 --sizes 512 1024 --check 0.95
    python benchmarks/bench_matmul.py --dtype complex64   # cgemm (zgemm: complex128)
    OMP_NUM_THREADS=1 python benchmarks/bench_matmul.py --clock cpu   # on a busy machine

Each size is timed in alternating rounds (numpy, then ember), keeping the best time of each:
both libraries run their own OpenBLAS thread pool, and a pool keeps spinning for a while after a
call, so the rounds are separated by a pause that lets the other pool go to sleep. On a machine
shared with other work, wall time mostly measures the neighbours; ``--clock cpu`` times the
process's CPU time instead, which with one thread is the work itself (with more, it also counts
threads spinning at barriers).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import ember

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def best_time(fn, reps: int, clock) -> float:
    best = float("inf")
    for _ in range(reps):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def _random(rng, n: int, dtype: str) -> np.ndarray:
    values = rng.standard_normal((n, n))
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal((n, n))
    return values.astype(dtype)


def measure(n: int, dtype: str, rounds: int, pause: float, clock) -> tuple[float, float]:
    """Best seconds per n x n x n product for numpy and for ember."""
    rng = np.random.default_rng(0)
    a_np, b_np = (_random(rng, n, dtype) for _ in range(2))
    a, b = ember.from_numpy(a_np), ember.from_numpy(b_np)
    reps = max(2, int(2e9 / (2 * n**3)))  # about a second of work per round at 100 GFLOPS
    t_np = t_ember = float("inf")
    for _ in range(rounds):
        t_np = min(t_np, best_time(lambda: np.matmul(a_np, b_np), reps, clock))
        time.sleep(pause)
        t_ember = min(t_ember, best_time(lambda: ember.mm(a, b), reps, clock))
        time.sleep(pause)
    return t_np, t_ember


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument(
        "--dtype", default="float32", choices=["float32", "float64", "complex64", "complex128"]
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between rounds")
    parser.add_argument("--clock", default="wall", choices=sorted(CLOCKS))
    parser.add_argument(
        "--check", type=float, default=None, help="exit 1 if ember/numpy falls below this ratio"
    )
    args = parser.parse_args(argv)

    threads = os.environ.get("OMP_NUM_THREADS") or os.environ.get("EMBER_NUM_THREADS") or "all"
    print(
        f"ember.mm vs numpy.matmul, {args.dtype}, threads={threads}, cpus={os.cpu_count()}, "
        f"clock={args.clock}"
    )
    print(f"{'n':>6} {'numpy GFLOPS':>13} {'ember GFLOPS':>13} {'ratio':>7}")
    worst = float("inf")
    for n in args.sizes:
        t_np, t_ember = measure(n, args.dtype, args.rounds, args.pause, CLOCKS[args.clock])
        flops = (8.0 if args.dtype.startswith("complex") else 2.0) * n**3
        ratio = t_np / t_ember
        worst = min(worst, ratio)
        print(f"{n:>6} {flops / t_np / 1e9:>13.1f} {flops / t_ember / 1e9:>13.1f} {ratio:>7.3f}")
    if args.check is not None and worst < args.check:
        print(f"FAIL: ratio {worst:.3f} < {args.check}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
