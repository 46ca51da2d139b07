"""The foundation's performance targets: ember vs PyTorch CPU vs numpy, each in its own process.

    python benchmarks/bench_ops.py [--repeat 7] [--threads 2] [--libs ember,torch,numpy]

- a tiny op (``x + y`` on 16 float32 elements, no grad): per-call time; target <= 3x PyTorch;
- ``matmul`` float32 at n=1024 and 2048: GFLOPS; target >= 95% of numpy's;
- ``a * b + a`` and ``sum`` on 16M float32: GB/s of input read; target >= numpy's.

Each figure is the best of ``--repeat`` rounds (the minimum is the least disturbed by other load on
a shared machine). Ratios are ember / reference: below 1 is faster for times, above 1 for rates.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from isolate import best, in_own_process, load_library, ratio

LIBRARIES = ("ember", "torch", "numpy")
# (case, unit): a case's figure is a time in us, or a rate (GFLOPS, GB/s) computed from its time.
CASES = {
    "x + y, 16 float32": "us",
    "matmul 1024 float32": "GFLOPS",
    "matmul 2048 float32": "GFLOPS",
    "a * b + a, 16M float32": "GB/s",
    "sum, 16M float32": "GB/s",
}


def _from_numpy(name: str, lib, array):
    return array if name == "numpy" else lib.from_numpy(array)


def worker(name: str, threads: int, repeat: int) -> dict:
    """This library's figure for each case (run in a process of its own)."""
    lib = load_library(name, threads)
    figures = {}
    x = _from_numpy(name, lib, np.ones(16, np.float32))
    figures["x + y, 16 float32"] = best(lambda: x + x, 20000, repeat) * 1e6
    for n in (1024, 2048):
        a = _from_numpy(name, lib, np.random.default_rng(0).standard_normal((n, n), np.float32))
        figures[f"matmul {n} float32"] = 2 * n**3 / 1e9 / best(lambda a=a: a @ a, 3, repeat)
    size = 16 * 1024 * 1024
    rng = np.random.default_rng(1)
    a = _from_numpy(name, lib, rng.standard_normal(size, dtype=np.float32))
    b = _from_numpy(name, lib, rng.standard_normal(size, dtype=np.float32))
    figures["a * b + a, 16M float32"] = 2 * size * 4 / 1e9 / best(lambda: a * b + a, 3, repeat)
    figures["sum, 16M float32"] = size * 4 / 1e9 / best(lambda: a.sum(), 5, repeat)
    return figures


def table(results: dict) -> str:
    """One line per case: each library's figure and ember / reference ratios."""
    names = list(results)
    refs = [n for n in names if n != "ember"]
    head = f"{'benchmark':26s} {'unit':7s}" + "".join(f"{n:>10s}" for n in names)
    lines = [head + "".join(f"{'vs ' + n:>10s}" for n in refs)]
    for case, unit in CASES.items():
        figures = [results[n].get(case) for n in names]
        line = f"{case:26s} {unit:7s}" + "".join(f"{v:10.3f}" for v in figures)
        ours = results.get("ember", {}).get(case)
        lines.append(line + "".join(f"{ratio(ours, results[n].get(case)):>10s}" for n in refs))
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.repeat)))
        return
    results = {}
    for name in args.libs.split(","):
        try:
            results[name] = in_own_process(
                __file__, name, ["--repeat", str(args.repeat)], args.threads
            )
        except RuntimeError as exc:  # e.g. PyTorch not installed: the other columns still print
            print(f"{name}: skipped ({str(exc).splitlines()[-1]})", file=sys.stderr)
    print(table(results))


if __name__ == "__main__":
    main()
