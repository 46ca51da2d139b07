"""Calls of one hot-path case inside ``functools.reduce``, for callgrind to count instructions
there alone (load on a shared machine does not move instruction counts, unlike timings):

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=functools_reduce \\
        python benchmarks/instructions.py CASE N

CASE is ``add`` (``a + b``, float32, 16 elements), ``grad`` (the add on leaves that require
grad) or ``chain`` (bench_overhead's ten elementwise ops); N the number of calls, after 300
warm-up calls. Instructions per call: the difference of two runs (600 and 100 calls) over 500,
which leaves out the start-up and the warm-up (docs/eager_overhead.md).
"""

from __future__ import annotations

import functools
import sys

import numpy as np
from bench_overhead import _chain  # benchmarks/ is the script's directory

import ember


def case(name: str):
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(16).astype(np.float32) + 2.0 for _ in range(2)]
    a, b = (ember.from_numpy(v) for v in values)
    ga, gb = (ember.from_numpy(v).requires_grad_(True) for v in values)
    return {"add": lambda: a + b, "grad": lambda: ga + gb, "chain": _chain(ember, a, b)}[name]


def main(argv: list[str]) -> int:
    ember.set_num_threads(1)
    fn = case(argv[0])
    for _ in range(300):
        fn()
    functools.reduce(lambda acc, _: fn(), range(int(argv[1])), None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
