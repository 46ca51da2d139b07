"""Per-call overhead of small eager ops: ember against PyTorch (CPU) and numpy, one process each.

    python benchmarks/bench_overhead.py                 # 2 threads, every library
    python benchmarks/bench_overhead.py --threads 1
    python benchmarks/bench_overhead.py --libs ember,torch --repeat 21
    python benchmarks/bench_overhead.py --threads 1 --clock cpu   # on a loaded, shared machine

Cases (float32): ``add 16`` (``a + b`` on 16 elements), ``chain 16`` (ten elementwise ops on 16
elements: tensor-tensor, tensor-scalar and unary), ``matmul 64`` (64 x 64 @ 64 x 64) and
``add 16 grad`` (the add on leaves that require grad: the call records a graph node; numpy has
none). Tiny operands make the kernel itself negligible, so the figures are what the library
spends between the Python call and the kernel: dispatch, checks, output allocation.

Each library runs in a fresh interpreter (``--worker``), so that neither one's thread pools nor
caches disturb the other, under the same thread settings (``--threads``; the environment's
``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``/``EMBER_NUM_THREADS`` are set to it as well).
Each figure is the median over ``--repeat`` rounds of about ``--budget`` seconds; the table also
gives ember's time over PyTorch's (the target is 1.3 at most) and, for ``add 16 grad``, the time
over the same library's ``add 16`` (the target is 1.5 at most for ember). The machine this runs
on is often shared: rerun to confirm a figure, and compare only figures from one run; with
``--threads 1``, ``--clock cpu`` (the process's CPU time) leaves out the time spent descheduled.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

LIBRARIES = ("ember", "torch", "numpy")
CASES = ("add 16", "chain 16", "matmul 64", "add 16 grad")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
GRAD_OF = {"add 16 grad": "add 16"}  # a recording case and the case it records


def _chain(lib, a, b):
    """Ten elementwise ops, as a small model's glue code does them."""

    def chain():
        t = a + b
        t = t * a
        t = t - b
        t = t * 0.5
        t = lib.exp(t)
        t = lib.tanh(t)
        t = t + 1.0
        t = -t
        t = t / b
        return abs(t)

    return chain


def calls(name: str, lib) -> dict:
    """The timed calls of library ``name`` (module ``lib``), on the same values for each."""
    import numpy as np

    rng = np.random.default_rng(0)
    small = [rng.standard_normal(16).astype(np.float32) + 2.0 for _ in range(2)]
    square = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2)]
    if name == "numpy":
        a, b = small
        m, n = square
    else:
        a, b = (lib.from_numpy(x) for x in small)
        m, n = (lib.from_numpy(x) for x in square)
    found = {
        "add 16": lambda: a + b,
        "chain 16": _chain(lib, a, b),
        "matmul 64": lambda: m @ n,
    }
    if name != "numpy":
        ga, gb = (lib.from_numpy(x).requires_grad_(True) for x in small)
        found["add 16 grad"] = lambda: ga + gb
    return found


def timings(fn, repeat: int, budget: float, clock=time.perf_counter) -> list[float]:
    """Seconds per call of ``fn`` in each of ``repeat`` rounds of about ``budget`` seconds."""
    for _ in range(20):  # warm: memoised kernels, allocator, branch caches
        fn()
    start = time.perf_counter()
    for _ in range(20):
        fn()
    number = max(1, int(budget * 20 / max(time.perf_counter() - start, 1e-9)))
    rounds = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        rounds.append((clock() - start) / number)
    return rounds


def worker(name: str, threads: int, repeat: int, budget: float, clock: str) -> dict:
    start = time.perf_counter()
    if name == "numpy":
        import numpy as lib
    elif name == "torch":
        import torch as lib

        lib.set_num_threads(threads)
    else:
        import ember as lib

        lib.set_num_threads(threads)
    imported = time.perf_counter() - start
    results = {
        case: timings(fn, repeat, budget, CLOCKS[clock]) for case, fn in calls(name, lib).items()
    }
    return {"import": imported, "cases": results}


def run_worker(name: str, args) -> dict:
    options = ["--threads", str(args.threads), "--repeat", str(args.repeat)]
    options += ["--budget", str(args.budget), "--clock", args.clock]
    command = [sys.executable, os.path.abspath(__file__), "--worker", name, *options]
    # The checkout's ember first (benchmarks/ is not a package), as when run from the repo root.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    threads = str(args.threads)
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS=threads)
    env.update(OPENBLAS_NUM_THREADS=threads, EMBER_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"{name} worker failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.2f}"


def _ratio(top: float | None, bottom: float | None) -> str:
    return "-" if top is None or bottom is None else f"{top / bottom:.2f}x"


def table(results: dict) -> str:
    """Medians in microseconds per call, ember/torch, and each recording case over its op."""
    medians = {
        lib: {case: statistics.median(times) for case, times in found["cases"].items()}
        for lib, found in results.items()
    }
    libs = list(results)
    head = ["case", *libs, "ember/torch", "ember grad/op", "torch grad/op"]
    rows = [head]
    for case in CASES:
        row = [case, *(_us(medians[lib].get(case)) for lib in libs)]
        row.append(_ratio(medians.get("ember", {}).get(case), medians.get("torch", {}).get(case)))
        for lib in ("ember", "torch"):
            base = GRAD_OF.get(case)
            found = medians.get(lib, {})
            row.append(_ratio(found.get(case), found.get(base)) if base else "")
        rows.append(row)
    rows.append(["import (ms)", *(f"{results[lib]['import'] * 1e3:.0f}" for lib in libs)])
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(len(head))]
    lines = []
    for row in rows:
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=11, help="rounds per case (median)")
    parser.add_argument("--budget", type=float, default=0.05, help="seconds per round")
    parser.add_argument("--clock", default="wall", choices=sorted(CLOCKS))
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--json", action="store_true", help="print the raw rounds as JSON too")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.threads, args.repeat, args.budget, args.clock)))
        return 0
    libs = [name.strip() for name in args.libs.split(",") if name.strip()]
    unknown = sorted(set(libs) - set(LIBRARIES))
    if unknown:
        parser.error(f"unknown libraries {unknown}; choose from {', '.join(LIBRARIES)}")
    results = {name: run_worker(name, args) for name in libs}
    rounds = f"{args.repeat} rounds of {args.budget * 1e3:g} ms per case, {args.clock} clock"
    print(f"per-call medians in microseconds, {args.threads} thread(s), {rounds}")
    print(table(results))
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
