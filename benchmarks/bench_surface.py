"""The core-surface ops that become hot in real models, ember vs PyTorch on the CPU, 1M elements.

    python benchmarks/bench_surface.py [--repeat 5] [--threads 1] [--stat median] [--clock cpu]

cumsum, scatter_reduce (sum and amax into 1000 bins), index_put_ (accumulate), median, quantile and
unique (of 1000 integer values, and of the 1M floats). Each library runs in its own process (thread
pools and allocator caches never meet); times are the best (or ``--stat median``) of ``--repeat``
calls through the public API, in milliseconds; the last column is ember's time over PyTorch's (the
issue's target: within 1.5). ``--clock cpu`` times the process's CPU time instead of the wall clock:
on a shared machine it leaves out the time other processes hold the cores (with one thread; with
more it sums the threads').
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's ember
N = 1 << 20
BINS = 1000


def cases(lib) -> dict:
    """name -> a call of ``lib`` (ember or torch: the same API) on fixed 1M-element inputs."""
    lib.manual_seed(0)
    x = lib.randn(N)
    index = (lib.rand(N) * BINS).long()
    flat = lib.zeros(BINS)
    return {
        "cumsum": lambda: lib.cumsum(x, 0),
        "scatter_reduce sum": lambda: flat.scatter_reduce(0, index, x, "sum"),
        "scatter_reduce amax": lambda: flat.scatter_reduce(0, index, x, "amax"),
        "index_put_ accumulate": lambda: flat.clone().index_put_((index,), x, accumulate=True),
        "median": lambda: lib.median(x),
        "quantile 0.9": lambda: lib.quantile(x, 0.9),
        "unique (1000 values)": lambda: lib.unique(index),  # integers of a short span: counted
        "unique (randn floats)": lambda: lib.unique(x),  # ~1M distinct values: the sort
    }


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
STATS = {"best": min, "median": statistics.median}


def time_ms(fn, repeat: int, clock, stat) -> float:
    fn()  # warm-up: kernel lookup, allocator, page faults
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return stat(times) * 1e3


def worker(lib_name: str, repeat: int, threads: int, clock: str, stat: str) -> dict:
    sys.path.insert(0, ROOT)
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    found = {}
    for name, fn in cases(lib).items():
        try:
            found[name] = time_ms(fn, repeat, CLOCKS[clock], STATS[stat])
        except Exception as exc:  # a missing op or overload: shown, not fatal
            found[name] = f"{type(exc).__name__}: {exc}"[:60]
    return found


def run(lib_name: str, args) -> dict:
    command = [sys.executable, __file__, "--worker", lib_name, "--repeat", str(args.repeat)]
    command += ["--threads", str(args.threads), "--clock", args.clock, "--stat", args.stat]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--stat", choices=sorted(STATS), default="best")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.repeat, args.threads, args.clock, args.stat)))
        return
    ours, theirs = run("ember", args), run("torch", args)
    print(f"{'op (1M elements)':28} {'ember ms':>10} {'torch ms':>10} {'ratio':>7}")
    for name, mine in ours.items():
        other = theirs.get(name)
        if isinstance(mine, float) and isinstance(other, float):
            print(f"{name:28} {mine:10.2f} {other:10.2f} {mine / other:7.2f}")
        else:
            print(f"{name:28} {mine!s:>10} {other!s:>10}")


if __name__ == "__main__":
    main()
