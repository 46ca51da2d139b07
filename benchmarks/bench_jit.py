"""Graph capture costs and inference latency of the training demo's GPT:

    python benchmarks/bench_jit.py [--repeat 7]

For a GEMM-bound size (batch 8 x context 64) and a dispatch-bound one (batch 1 x context 8):

- eager: ``model(idx)`` in eval mode under no_grad;
- traced: ``ember.jit.trace``, then saved and loaded (what a deployment runs);
- optimized: the loaded module through ``ember.jit.optimize_for_inference``;
- export: ``ember.export.export(...).module()``;

and the time of tracing, saving + loading, optimizing and exporting. All modes are ember, so
they share one process and take turns round by round (load on a shared machine then falls on
all alike); each figure is the best round. Ratios are against eager ember.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's ember, not an older installed copy

import ember  # noqa: E402

MODES = ("eager", "traced", "optimized", "export")


def gpt(context: int):
    spec = importlib.util.spec_from_file_location("train_gpt", f"{ROOT}/examples/train_gpt.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ember.manual_seed(0)
    return module.GPT(vocab=256, context=context, d_model=128, heads=4, layers=4).eval()


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def prepare(batch: int, context: int) -> tuple[dict, dict]:
    """The callables of every mode, and how long capturing them took."""
    model = gpt(context)
    idx = ember.randint(0, 256, (batch, context))
    costs = {}
    traced, costs["trace"] = timed(lambda: ember.jit.trace(model, idx, check_trace=False))

    def save_load():
        buffer = io.BytesIO()
        ember.jit.save(traced, buffer)
        return ember.jit.load(io.BytesIO(buffer.getvalue()))

    loaded, costs["save+load"] = timed(save_load)
    optimized, costs["optimize"] = timed(lambda: ember.jit.optimize_for_inference(save_load()))
    exported, costs["export"] = timed(lambda: ember.export.export(model, (idx,)).module())
    calls = {
        "eager": lambda: model(idx),
        "traced": lambda: loaded(idx),
        "optimized": lambda: optimized(idx),
        "export": lambda: exported(idx),
    }
    return calls, costs


def best_rounds(calls: dict, repeat: int, number: int) -> dict:
    best = dict.fromkeys(calls, float("inf"))
    for turn in range(repeat + 1):  # the first round of each warms up
        for mode, call in calls.items():
            start = time.perf_counter()
            for _ in range(number):
                call()
            if turn:
                best[mode] = min(best[mode], (time.perf_counter() - start) / number)
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    with ember.no_grad():
        for batch, context, number in ((8, 64, 3), (1, 8, 20)):
            calls, costs = prepare(batch, context)
            best = best_rounds(calls, args.repeat, number)
            print(f"GPT inference, batch {batch} x context {context} (best of {args.repeat})")
            for mode in MODES:
                ratio = best[mode] / best["eager"]
                print(f"  {mode:<10} {best[mode] * 1e3:8.2f} ms   {ratio:5.2f}x eager")
            print("  capture: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in costs.items()))


if __name__ == "__main__":
    main()
