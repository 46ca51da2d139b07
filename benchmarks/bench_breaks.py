"""A function with a graph break in the middle: eager ember against compiled ember (the
segments around the break, compiler/segments.py), calls alternated in one process.

    python benchmarks/bench_breaks.py [--n 4096] [--calls 300] [--threads 1] [--train]

The function is a chain of elementwise ops (no transcendental: see docs/compile.md) and a
matmul, a data-dependent ``if`` on
its mean (the break), then more elementwise ops, without grad. Printed: the median time per
call of each, and compiled / eager. ``--train``: a training step instead (an MLP of width
``--width`` whose forward reads ``.item()`` between its layers, batch ``--n // width``; the
model compiled, cross-entropy, backward and SGD eager), eager and compiled models stepped in
turn.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import ember
import ember.nn as nn


def body(x, w):
    h = (x @ w + 1).relu() * 0.5 + x
    if h.mean() > 0:  # data-dependent: a graph break between two regions
        h = h * 2
    else:
        h = h - 1
    return (h * h + 0.1).relu().sum(-1)


class Clipped(nn.Module):
    """An MLP whose forward reads a statistic as a Python number (a graph break)."""

    def __init__(self, width: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(width, width), nn.Linear(width, width)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        h = nn.functional.gelu(self.fc1(x))
        if h.abs().max().item() > 1e6:  # data-dependent: a graph break between two regions
            h = h * 0.5
        return self.head(nn.functional.gelu(self.fc2(h)) + h)


def train(args) -> dict:
    """Median ms per training step, eager and compiled, stepped in turn."""
    ember.manual_seed(0)
    eager = Clipped(args.width)
    twin = copy.deepcopy(eager)
    runs = {
        "eager": (eager, ember.optim.SGD(eager.parameters(), lr=0.01)),
        "compiled": (ember.compile(twin), ember.optim.SGD(twin.parameters(), lr=0.01)),
    }
    x = ember.randn(args.n // args.width, args.width)
    y = ember.randint(0, 10, (args.n // args.width,))
    times: dict = {name: [] for name in runs}
    for step in range(args.calls + 3):  # capture, recording, first replay (pairs built)
        for name, (model, opt) in runs.items():
            start = time.perf_counter()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step >= 3:
                times[name].append(time.perf_counter() - start)
    return times


def calls(args) -> dict:
    """Median ms per call without grad, eager and compiled, called in turn."""
    x, w = ember.randn(args.n // 64, 64), ember.randn(64, 64) * 0.1
    compiled = ember.compile(body)
    times: dict = {"eager": [], "compiled": []}
    with ember.no_grad():
        for _ in range(3):  # capture, recording of the segments, first replays
            compiled(x, w)
        for _ in range(args.calls):
            for name, fn in (("eager", body), ("compiled", compiled)):
                start = time.perf_counter()
                fn(x, w)
                times[name].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4096, help="elements of x (rows of 64)")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train", action="store_true", help="training steps with a break")
    parser.add_argument("--width", type=int, default=64, help="--train: the MLP's width")
    args = parser.parse_args()
    ember.set_num_threads(args.threads)
    times = train(args) if args.train else calls(args)
    eager, comp = (statistics.median(times[k]) * 1e3 for k in ("eager", "compiled"))
    what = "training step" if args.train else "call"
    print(
        f"per {what}: eager {eager:.3f} ms, compiled {comp:.3f} ms, compiled / eager "
        f"{comp / eager:.2f}x"
    )


if __name__ == "__main__":
    main()
