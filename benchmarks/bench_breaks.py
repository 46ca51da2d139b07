"""A function with a graph break in the middle: eager ember against compiled ember (the
segments around the break, compiler/segments.py), calls alternated in one process.

    python benchmarks/bench_breaks.py [--n 4096] [--calls 300] [--threads 1]

The function is a chain of elementwise ops (no transcendental: see docs/compile.md) and a
matmul, a data-dependent ``if`` on
its mean (the break), then more elementwise ops, without grad. Printed: the median time per
call of each, and compiled / eager.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ember


def body(x, w):
    h = (x @ w + 1).relu() * 0.5 + x
    if h.mean() > 0:  # data-dependent: a graph break between two regions
        h = h * 2
    else:
        h = h - 1
    return (h * h + 0.1).relu().sum(-1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4096, help="elements of x (rows of 64)")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    ember.set_num_threads(args.threads)
    x, w = ember.randn(args.n // 64, 64), ember.randn(64, 64) * 0.1
    compiled = ember.compile(body)
    times = {"eager": [], "compiled": []}
    with ember.no_grad():
        for _ in range(3):  # capture, recording of the segments, first replays
            compiled(x, w)
        for _ in range(args.calls):
            for name, fn in (("eager", body), ("compiled", compiled)):
                start = time.perf_counter()
                fn(x, w)
                times[name].append(time.perf_counter() - start)
    eager, comp = (statistics.median(times[k]) * 1e3 for k in ("eager", "compiled"))
    print(f"eager {eager:.3f} ms, compiled {comp:.3f} ms, compiled / eager {comp / eager:.2f}x")


if __name__ == "__main__":
    main()
