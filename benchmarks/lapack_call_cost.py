"""What one LAPACK call of a batch costs on one thread, the Python glue left out: the CPU time
of lu_factor_ex, cholesky_ex and lu_solve (one right-hand side) on a batch of 64 matrices minus
a batch of 1, over 63 (float32, median of 9 rounds). csrc/lapack.c's cost model (SOLVE_CALL_WORK,
SOLVE_PARALLEL_WORK) is fitted on these figures (docs/threads.md).

    python benchmarks/lapack_call_cost.py [--sizes 4 8 16 32 64]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ember
from ember.dispatcher.kinds._common import OPS


def cpu_time(fn, reps: int) -> float:
    for _ in range(20):
        fn()
    rounds = []
    for _ in range(9):
        start = time.process_time()
        for _ in range(reps):
            fn()
        rounds.append((time.process_time() - start) / reps)
    return statistics.median(rounds)


def calls(batch: int, n: int, rng) -> list:
    a = rng.standard_normal((batch, n, n)) + n**0.5 * np.eye(n)
    s = a @ np.swapaxes(a, -1, -2) / n + np.eye(n)
    A, S = ember.from_numpy(a.astype(np.float32)), ember.from_numpy(s.astype(np.float32))
    B = ember.from_numpy(rng.standard_normal((batch, n, 1)).astype(np.float32))
    LU, pivots, _ = OPS["linalg_lu_factor_ex"](A)
    return [
        lambda: OPS["linalg_lu_factor_ex"](A),
        lambda: OPS["linalg_cholesky_ex"](S),
        lambda: OPS["linalg_lu_solve"](LU, pivots, B),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    args = parser.parse_args()
    ember.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"{'n':>4s} {'getrf us':>9s} {'potrf us':>9s} {'getrs us':>9s}")
    for n in args.sizes:
        reps = max(20, 2000 // (64 * n))
        one, many = ([cpu_time(fn, reps) for fn in calls(b, n, rng)] for b in (1, 64))
        per = [(m - o) / 63 * 1e6 for m, o in zip(many, one)]
        print(f"{n:4d} {per[0]:9.3f} {per[1]:9.3f} {per[2]:9.3f}")


if __name__ == "__main__":
    main()
