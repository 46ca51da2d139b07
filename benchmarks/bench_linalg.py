"""ember.linalg against torch.linalg (CPU), each library in its own process.

    python benchmarks/bench_linalg.py                       # float32, all cases
    python benchmarks/bench_linalg.py --dtype float64 --threads 1 --check 1.3
    python benchmarks/bench_linalg.py --threads 1 --clock cpu   # on a loaded, shared machine
    python benchmarks/bench_linalg.py --threads 2 --stat median --repeat 21

Cases: solve, inv, svd and eigh on one 512 x 512 matrix and on a batch of 64 matrices of
32 x 32, and the backward of cholesky (forward + backward) at both sizes. Each library runs in a
fresh interpreter (``--worker``), so neither one's thread pools or caches disturb the other; each
figure is the best of ``--repeat`` rounds (``--stat median``: their median). The ratio is
ember's time over torch's: below 1 is faster; ``--check`` fails when any ratio is above it (the
target is 1.3). ``--clock cpu`` times with the process's CPU time instead of the wall clock:
with ``--threads 1`` on a machine that other jobs load (where being descheduled dominates the
wall clock) it measures the work alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SHAPES = {"512": (512,), "64x32": (64, 32)}
CASES = ("solve", "inv", "svd", "eigh", "cholesky backward")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
STATS = {"best": min, "median": statistics.median}


def matrices(shape_name: str, dtype: str, seed: int = 0) -> dict:
    """Well-conditioned inputs, the same for both libraries."""
    rng = np.random.default_rng(seed)
    n = SHAPES[shape_name][-1]
    batch = SHAPES[shape_name][:-1]
    a = rng.standard_normal((*batch, n, n)) + n**0.5 * np.eye(n)
    spd = a @ np.swapaxes(a, -1, -2) / n + np.eye(n)
    return {
        "A": a.astype(dtype),
        "B": rng.standard_normal((*batch, n, 1)).astype(dtype),
        "S": spd.astype(dtype),
        "G": rng.standard_normal((*batch, n, n)).astype(dtype),
    }


def calls(lib, data: dict) -> dict:
    """The timed calls for ``lib`` (ember or torch) on ``data`` (numpy arrays)."""
    make = lib.from_numpy
    A, B, S, G = (make(np.ascontiguousarray(data[k])) for k in "ABSG")
    S_leaf = make(np.ascontiguousarray(data["S"])).requires_grad_(True)

    def cholesky_backward():
        S_leaf.grad = None
        lib.linalg.cholesky(S_leaf).backward(G)

    return {
        "solve": lambda: lib.linalg.solve(A, B),
        "inv": lambda: lib.linalg.inv(A),
        "svd": lambda: lib.linalg.svd(A, full_matrices=False),
        "eigh": lambda: lib.linalg.eigh(S),
        "cholesky backward": cholesky_backward,
    }


def best(fn, repeat: int, clock=time.perf_counter, budget: float = 0.2, stat=min) -> float:
    fn()
    start = clock()
    fn()
    once = max(clock() - start, 1e-6)
    number = max(1, int(budget / once))
    times = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        times.append((clock() - start) / number)
    return stat(times)


def worker(library: str, dtype: str, threads: int, repeat: int, clock: str, stat: str) -> dict:
    if library == "torch":
        import torch as lib

        lib.set_num_threads(threads)
    else:
        import ember as lib

        lib.set_num_threads(threads)
    results, timer = {}, CLOCKS[clock]
    for shape_name in SHAPES:
        for case, fn in calls(lib, matrices(shape_name, dtype)).items():
            results[f"{case} {shape_name}"] = best(fn, repeat, timer, stat=STATS[stat])
    return results


def run_worker(library: str, args) -> dict:
    options = ["--dtype", args.dtype, "--threads", str(args.threads), "--repeat", str(args.repeat),
               "--clock", args.clock, "--stat", args.stat]  # fmt: skip
    command = [sys.executable, os.path.abspath(__file__), "--worker", library, *options]
    # The checkout's ember first (benchmarks/ is not a package), as when run from the repo root.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get(
        "PYTHONPATH")])))  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--clock", default="wall", choices=sorted(CLOCKS))
    parser.add_argument("--stat", default="best", choices=sorted(STATS))
    parser.add_argument("--check", type=float, default=None, help="fail above this ratio")
    parser.add_argument("--worker", choices=["ember", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        options = (args.dtype, args.threads, args.repeat, args.clock, args.stat)
        print(json.dumps(worker(args.worker, *options)))
        return 0

    ours, theirs = run_worker("ember", args), run_worker("torch", args)
    setting = f"{args.dtype}, threads={args.threads}, {args.clock} clock, {args.stat}"
    print(f"ember.linalg vs torch.linalg, {setting}, separate processes")
    print(f"{'case':28s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>7s}")
    worst = 0.0
    for name, t in ours.items():
        ratio = t / theirs[name]
        worst = max(worst, ratio)
        print(f"{name:28s} {t * 1e3:10.3f} {theirs[name] * 1e3:10.3f} {ratio:7.2f}")
    print(f"worst ratio {worst:.2f}")
    if args.check is not None and worst > args.check:
        print(f"FAIL: a ratio is above {args.check}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
