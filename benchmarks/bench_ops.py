"""The foundation's performance targets: ember vs PyTorch CPU vs numpy, each in its own process.

    python benchmarks/bench_ops.py [--repeat 7] [--threads 2] [--libs ember,torch,numpy]
        [--only sum,softmax] [--cpu-time]

- a tiny op (``x + y`` on 16 float32 elements, no grad): per-call time; target <= 3x PyTorch;
- ``matmul`` float32 at n=1024 and 2048: GFLOPS; target >= 95% of numpy's;
- ``a * b + a`` and ``sum`` on 16M float32: GB/s of input read; target >= numpy's (issue 20:
  >= PyTorch's);
- ``softmax`` and ``log_softmax`` along the last dim of 4096x4096 float32: GB/s of input read;
  target >= PyTorch's (numpy has none: its column is empty).

Each figure is the best of ``--repeat`` rounds (the minimum is the least disturbed by other load on
a shared machine). Ratios are ember / reference: below 1 is faster for times, above 1 for rates.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from isolate import best, in_own_process, load_library, ratio

LIBRARIES = ("ember", "torch", "numpy")
SIZE = 16 * 1024 * 1024  # elements of the bandwidth cases


def _from_numpy(name: str, lib, array):
    return array if name == "numpy" else lib.from_numpy(array)


def _normal(name: str, lib, seed: int, shape=SIZE):
    array = np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)
    return _from_numpy(name, lib, array)


def _tiny_add(name, lib, time_of):
    x = _from_numpy(name, lib, np.ones(16, np.float32))
    return time_of(lambda: x + x, 20000) * 1e6


def _matmul(n: int):
    def figure(name, lib, time_of):
        a = _normal(name, lib, 0, (n, n))
        return 2 * n**3 / 1e9 / time_of(lambda: a @ a, 3)

    return figure


def _mul_add(name, lib, time_of):
    a, b = _normal(name, lib, 1), _normal(name, lib, 2)
    return 2 * SIZE * 4 / 1e9 / time_of(lambda: a * b + a, 3)


def _sum(name, lib, time_of):
    a = _normal(name, lib, 1)
    return SIZE * 4 / 1e9 / time_of(lambda: a.sum(), 5)


def _rows(op: str):
    """softmax or log_softmax along the last dim; numpy has neither (None: an empty column)."""

    def figure(name, lib, time_of):
        if name == "numpy":
            return None
        x, fn = _normal(name, lib, 1).reshape(4096, 4096), getattr(lib, op)
        return SIZE * 4 / 1e9 / time_of(lambda: fn(x, -1), 5)

    return figure


# case: (unit, figure(library name, library, time_of)): a time in us, or a rate (GFLOPS, GB/s)
# computed from its time; time_of(fn, number) is the best round's seconds per call.
CASES = {
    "x + y, 16 float32": ("us", _tiny_add),
    "matmul 1024 float32": ("GFLOPS", _matmul(1024)),
    "matmul 2048 float32": ("GFLOPS", _matmul(2048)),
    "a * b + a, 16M float32": ("GB/s", _mul_add),
    "sum, 16M float32": ("GB/s", _sum),
    "softmax, 4096x4096 float32": ("GB/s", _rows("softmax")),
    "log_softmax, 4096x4096 float32": ("GB/s", _rows("log_softmax")),
}


def selected(only: str) -> list[str]:
    """The cases whose name starts with one of the comma-separated prefixes (all for "")."""
    prefixes = [p.strip() for p in only.split(",") if p.strip()]
    return [c for c in CASES if not prefixes or any(c.startswith(p) for p in prefixes)]


def worker(name: str, threads: int, repeat: int, only: str, cpu_time: bool = False) -> dict:
    """This library's figure for each selected case (run in a process of its own). cpu_time:
    the calling thread's CPU time instead of wall time (one thread: other processes on a busy
    machine barely change it)."""
    lib = load_library(name, threads)
    clock = time.thread_time if cpu_time else time.perf_counter

    def time_of(fn, number):
        return best(fn, number, repeat, clock)

    return {case: CASES[case][1](name, lib, time_of) for case in selected(only)}


def table(results: dict, only: str = "") -> str:
    """One line per case: each library's figure and ember / reference ratios."""
    names = list(results)
    refs = [n for n in names if n != "ember"]
    head = f"{'benchmark':30s} {'unit':7s}" + "".join(f"{n:>10s}" for n in names)
    lines = [head + "".join(f"{'vs ' + n:>10s}" for n in refs)]
    for case in selected(only):
        unit = CASES[case][0]
        figures = [results[n].get(case) for n in names]
        line = f"{case:30s} {unit:7s}" + "".join(
            f"{'-':>10s}" if v is None else f"{v:10.3f}" for v in figures
        )
        ours = results.get("ember", {}).get(case)
        lines.append(line + "".join(f"{ratio(ours, results[n].get(case)):>10s}" for n in refs))
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--only", default="", help="comma-separated case-name prefixes")
    parser.add_argument(
        "--cpu-time", action="store_true", help="time the calling thread's CPU (use --threads 1)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        figures = worker(args.worker, args.threads, args.repeat, args.only, args.cpu_time)
        print(json.dumps(figures))
        return
    options = ["--repeat", str(args.repeat), "--only", args.only]
    options += ["--cpu-time"] if args.cpu_time else []
    results = {}
    for name in args.libs.split(","):
        try:
            results[name] = in_own_process(__file__, name, options, args.threads)
        except RuntimeError as exc:  # e.g. PyTorch not installed: the other columns still print
            print(f"{name}: skipped ({str(exc).splitlines()[-1]})", file=sys.stderr)
    print(table(results, args.only))


if __name__ == "__main__":
    main()
