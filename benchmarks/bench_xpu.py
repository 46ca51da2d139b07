"""The xpu (OpenCL) backend against ember's CPU backend and numpy, measured in the same process.

    python benchmarks/bench_xpu.py                # every case
    python benchmarks/bench_xpu.py --cases add sum --reps 10

Cases: matmul 1024 and 2048, ``a*b+a`` and ``sum`` over 16M float32, softmax over the rows of a
4096x4096 matrix, one training step of each bench_training.py model (MLP, CNN, GPT), and the cost
of one tiny op (launch and Python overhead). Each time is the best of ``--reps`` runs after a
warm-up run (which compiles the programs), the devices taking turns run by run so that they
share the machine's noise; xpu runs end with ``ember.xpu.synchronize()``. The
last column counts the OpenCL programs compiled during the timed runs, which must stay 0: no
per-call builds.

On a machine without a GPU, xpu runs on PoCL's CPU device, where it is not expected to beat the
native CPU backend; the ratios show that it carries no pathological overhead.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_training import MODELS  # the three models, run from benchmarks/ like this script

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatcher.devices import REGISTRY


def best_interleaved(fns: dict, reps: int, syncs: dict) -> dict:
    """Best time of each ``fns[device]`` over ``reps`` rounds, each round running every device
    once in turn, so that a noisy neighbour on a shared machine slows all of them alike instead of
    whichever happened to be measured then. A warm-up run first compiles and allocates."""

    def timed(device):
        start = time.perf_counter()
        fns[device]()
        if syncs.get(device):
            syncs[device]()
        return time.perf_counter() - start

    for device in fns:
        timed(device)
    times = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for device in fns:
            times[device] = min(times[device], timed(device))
    return times


def _inputs(shape, count=2, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def case_matmul(n):
    a, b = _inputs((n, n))

    def run(device):
        if device == "numpy":
            return lambda: a @ b
        x, y = ember.from_numpy(a).to(device), ember.from_numpy(b).to(device)
        return lambda: x @ y

    return f"matmul {n}", run


def case_add():
    a, b = _inputs((1 << 24,))

    def run(device):
        if device == "numpy":
            return lambda: a * b + a
        x, y = ember.from_numpy(a).to(device), ember.from_numpy(b).to(device)
        return lambda: x * y + x

    return "a*b+a 16M", run


def case_sum():
    (a,) = _inputs((1 << 24,), 1)

    def run(device):
        if device == "numpy":
            return lambda: a.sum()
        x = ember.from_numpy(a).to(device)
        return lambda: x.sum()

    return "sum 16M", run


def case_softmax():
    (a,) = _inputs((4096, 4096), 1)

    def run(device):
        if device == "numpy":

            def softmax():
                e = np.exp(a - a.max(1, keepdims=True))
                return e / e.sum(1, keepdims=True)

            return softmax
        x = ember.from_numpy(a).to(device)
        return lambda: x.softmax(1)

    return "softmax 4096x4096", run


def case_training(name: str):
    """One training step of bench_training.py's model ``name`` (forward, backward, optimizer)."""

    def run(device):
        if device == "numpy":
            return None
        ember.manual_seed(0)
        model, optimizer, x, y = MODELS[name](nn, ember)
        model.to(device)
        x, y = x.to(device), y.to(device)

        def step():
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        return step

    return f"{name.upper()} train step", run


def case_tiny_op():
    def run(device):
        if device == "numpy":
            a = np.ones(1000, np.float32)
            return lambda: [a + a for _ in range(100)]
        x = ember.ones(1000, device=device)
        return lambda: [x + x for _ in range(100)]

    return "100 x (x + x), 1000 elements", run


CASES = {
    "matmul1024": lambda: case_matmul(1024),
    "matmul2048": lambda: case_matmul(2048),
    "add": case_add,
    "sum": case_sum,
    "softmax": case_softmax,
    "mlp": lambda: case_training("mlp"),
    "cnn": lambda: case_training("cnn"),
    "gpt": lambda: case_training("gpt"),
    "tiny": case_tiny_op,
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)

    if not ember.xpu.is_available():
        print(f"xpu unavailable: {ember.xpu.unavailable_reason()}")
        return 1
    programs = REGISTRY.backend("xpu").runtime.devices[0].programs
    print(f"xpu: {ember.xpu.get_device_name(0)} ({ember.xpu.get_device_properties(0).platform})")
    header = f"{'case':<30}{'numpy ms':>10}{'cpu ms':>10}{'xpu ms':>10}{'xpu/cpu':>9}"
    print(header + f"{'xpu/numpy':>11}{'builds':>8}")
    for name in args.cases:
        label, run = CASES[name]()
        fns = {device: run(device) for device in ("numpy", "cpu", "xpu")}
        fns = {device: fn for device, fn in fns.items() if fn is not None}
        fns["xpu"]()  # compile everything first, then count builds during the timed runs
        ember.xpu.synchronize()
        builds = programs.builds
        times = best_interleaved(fns, args.reps, {"xpu": ember.xpu.synchronize})
        new_builds = programs.builds - builds
        np_ms = f"{times['numpy'] * 1e3:10.2f}" if "numpy" in times else f"{'-':>10}"
        vs_np = f"{times['xpu'] / times['numpy']:11.2f}" if "numpy" in times else f"{'-':>11}"
        print(
            f"{label:<30}{np_ms}{times['cpu'] * 1e3:10.2f}{times['xpu'] * 1e3:10.2f}"
            f"{times['xpu'] / times['cpu']:9.2f}{vs_np}{new_builds:8d}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
