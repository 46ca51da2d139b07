"""The eager hot path step by step: CPU time per call of each nested layer of ``a + b``.

    python benchmarks/hot_path_steps.py                 # every step
    python benchmarks/hot_path_steps.py "a + b" "a - b"  # some of them

Each step is one more layer of the path, called directly on the same float32 operands of 16
elements (``a + b``, the binary runner, ``empty()``, the raw allocation, the contiguous cffi
entry the runner calls, and the general kernel glue and its cffi call; and for recording,
``ga + gb`` on leaves that require grad, the autograd layer's ``handle``, ``Formula.record``,
``Node()``); a step's own cost is its time minus the time of the layers it calls
(docs/eager_overhead.md). Figures are the minimum and median over 31 rounds of about 20 ms of
the process's CPU time (``bench_overhead.timings``), one
thread: on a shared machine the minimum is the better estimate.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
from bench_overhead import timings  # benchmarks/ is the script's directory
from ember_backend_cpu._kernels import ffi, lib

import ember
from ember._tensor import empty
from ember.autograd.layer import LAYER
from ember.autograd.node import Node
from ember.dispatcher.optable import OPS


def steps() -> dict:
    ember.set_num_threads(1)
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(16).astype(np.float32) + 2.0 for _ in range(2)]
    a, b = (ember.from_numpy(v) for v in values)
    ga, gb = (ember.from_numpy(v).requires_grad_(True) for v in values)
    add = OPS["add"]
    out = a + b  # resolves add's fast-path entry
    device, kernel, _, contiguous, key = add.fast[a._dtype]
    route = device._route
    allocate, address, leading = route[0], route[4], route[5]
    formula = add.formula
    recorded = formula.record(add, (ga, gb))
    edges, meta = recorded.edges, recorded.input_meta
    po, pa, pb = out._storage.ptr, a._storage.ptr, b._storage.ptr
    null, call, f32 = ffi.NULL, lib.ember_binary, a._dtype
    return {
        "a + b": lambda: a + b,
        "binary runner": lambda: add.runner(add, a, b),
        "empty()": lambda: empty((16,), f32, device),
        "small alloc + address": lambda: address(allocate(leading, 64)),
        # the contiguous entry the runner calls (op, float32 and 16 elements; the loop ~0.05 us)
        "contiguous cffi call": lambda: contiguous(key, po, pa, pb, 16),
        # the general entry: the glue, then ember_binary's 14 arguments
        "kernel glue + cffi": lambda: kernel(out, a, b),
        "bare cffi call": lambda: call(0, 8, 16, 0, null, po, null, pa, null, pb, null, 0.0, 0, 0),
        "a * b": lambda: a * b,
        "a - b": lambda: a - b,
        "ga + gb": lambda: ga + gb,
        "AutogradLayer.handle": lambda: LAYER.handle(add, (ga, gb)),
        "Formula.record": lambda: formula.record(add, (ga, gb)),
        "Node()": lambda: Node().fill(add, formula, edges, meta),
    }


def main(argv: list[str]) -> int:
    table = steps()
    for name in argv or list(table):
        found = timings(table[name], 31, 0.02, time.process_time)
        low, mid = min(found) * 1e9, statistics.median(found) * 1e9
        print(f"{name:22s} min {low:7.0f} ns  median {mid:7.0f} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
