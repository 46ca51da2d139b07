"""Instructions per call of a hot-path case, counted by callgrind (load on a shared machine does
not move instruction counts, unlike timings):

    python benchmarks/instructions.py add grad scalar      # runs valgrind, prints per call
    python benchmarks/instructions.py --lib torch add      # PyTorch's, counted the same way

CASE is ``add`` (``a + b``, float32, 16 elements), ``grad`` (the add on leaves that require
grad), ``scalar`` (``a * 2.0``), ``chain`` (bench_overhead's ten elementwise ops), or a
training step of bench_compile's ``tiny`` MLP, eager (``step``) or its model compiled
(``compiled``; issue 17's small-model bound is against the eager step) or the whole step
compiled as one region (``whole``). One
valgrind process per case: the import and 300 warm-up calls run uninstrumented (the script
switches instrumentation on with ``callgrind_control`` then), 300 more calls run instrumented
but uncounted, then ``functools.reduce`` runs 100 calls and another one 600; callgrind counts
only inside ``functools.reduce`` and dumps after each, so instructions per call are the
difference of the two dumps over 500, which leaves out the start-up, the warm-up and the
reduce calls' own cost (docs/eager_overhead.md). ``PYTHONHASHSEED=0`` keeps dict layouts, and
so the counts, the same from run to run.

``--worker LIB CASE`` is the process valgrind runs.
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
from bench_overhead import _chain  # benchmarks/ is the script's directory

COUNTS = (100, 600)
STEP_COUNTS = (20, 70)  # a training step is ~100x an add: fewer calls keep valgrind's run short
# case -> (ember.compile mode of the tiny model, whether the whole step is compiled instead)
STEPS = {"step": (None, False), "compiled": ("default", False), "whole": ("default", True)}


def case(name: str, lib=None):
    """The call of case ``name`` on library ``lib`` (ember when None)."""
    if lib is None:
        import ember as lib
    if name in STEPS:
        from bench_compile import training_step

        lib.manual_seed(0)
        mode, whole = STEPS[name]
        return training_step(lib, "tiny", mode, whole)[0]
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(16).astype(np.float32) + 2.0 for _ in range(2)]
    a, b = (lib.from_numpy(v) for v in values)
    ga, gb = (lib.from_numpy(v).requires_grad_(True) for v in values)
    cases = {
        "add": lambda: a + b,
        "grad": lambda: ga + gb,
        "scalar": lambda: a * 2.0,
        "chain": _chain(lib, a, b),
    }
    return cases[name]


def worker(lib_name: str, name: str) -> None:
    lib = __import__(lib_name)
    lib.set_num_threads(1)
    fn = case(name, lib)
    for _ in range(300):
        fn()
    pid = str(os.getpid())
    subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
    for _ in range(300):
        fn()
    for n in STEP_COUNTS if name in STEPS else COUNTS:
        functools.reduce(lambda acc, _: fn(), range(n), None)


def _totals(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


def measure(lib_name: str, name: str) -> float:
    """Instructions per call of case ``name`` under library ``lib_name``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            "--dump-after=functools_reduce",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--worker",
            lib_name,
            name,
        ]
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
        subprocess.run(command, check=True, capture_output=True, env=env)
        dumps = sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        few, many = (_totals(p) for p in dumps[-2:])
    few_calls, many_calls = STEP_COUNTS if name in STEPS else COUNTS
    return (many - few) / (many_calls - few_calls)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=["add", "grad", "scalar"])
    parser.add_argument("--lib", default="ember", choices=("ember", "torch"))
    parser.add_argument("--worker", nargs=2, metavar=("LIB", "CASE"))
    args = parser.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    for name in args.cases:
        print(f"{args.lib} {name:8s} {measure(args.lib, name):10,.0f} instructions per call")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
