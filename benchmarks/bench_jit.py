"""Graph capture costs and inference latency of the training demo's GPT:

    python benchmarks/bench_jit.py [--repeat 7]

For a GEMM-bound size (batch 8 x context 64) and a dispatch-bound one (batch 1 x context 8):

- eager: ``model(idx)`` in eval mode under no_grad;
- traced: ``ember.jit.trace``, then saved and loaded (what a deployment runs);
- optimized: the loaded module through ``ember.jit.optimize_for_inference``;
- export: ``ember.export.export(...).module()``;
- onnxruntime: the model written by ``ember.onnx.export`` (batch and sequence as dynamic
  axes), run by onnxruntime's CPU provider in its own process (its thread pool and allocator
  stay out of ember's); skipped with a note when ``ember[onnx]`` is not installed;

and the time of tracing, saving + loading, optimizing, exporting and ONNX export. The ember
modes share one process and take turns round by round (load on a shared machine then falls on
all alike); each figure is the best round. Ratios are against eager ember.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's ember, not an older installed copy

import ember  # noqa: E402

MODES = ("eager", "traced", "optimized", "export", "onnxruntime")


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
    onnx_bytes, costs["onnx export"] = timed(lambda: onnx_export(model, idx))
    calls = {
        "eager": lambda: model(idx),
        "traced": lambda: loaded(idx),
        "optimized": lambda: optimized(idx),
        "export": lambda: exported(idx),
    }
    return calls, costs, onnx_bytes


def onnx_export(model, idx) -> bytes | None:
    """The model as ONNX bytes, or None without the onnx package."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return None
    buffer = io.BytesIO()
    axes = {"idx": {0: "batch", 1: "seq"}}
    ember.onnx.export(model, (idx,), buffer, input_names=["idx"], dynamic_axes=axes)
    return buffer.getvalue()


def onnxruntime_best(model_bytes, batch: int, context: int, repeat: int, number: int):
    """Best seconds per call of onnxruntime on the model, measured in a child process."""
    if model_bytes is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
        f.write(model_bytes)
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--onnxruntime", f.name, "--repeat", str(repeat)]
            + ["--shape", str(batch), str(context), "--number", str(number)],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        print(f"  onnxruntime: failed: {out.stderr.strip().splitlines()[-1:]}")
        return None
    return float(out.stdout.split()[-1])


def onnxruntime_child(path: str, shape, repeat: int, number: int) -> None:
    """Child process: time onnxruntime alone and print the best seconds per call."""
    import numpy as np
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    sess = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {"idx": np.random.default_rng(0).integers(0, 256, shape, dtype=np.int64)}
    best = best_rounds({"ort": lambda: sess.run(None, feeds)}, repeat, number)
    print(best["ort"])


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
    parser.add_argument("--onnxruntime", help=argparse.SUPPRESS)  # the child's model file
    parser.add_argument("--shape", type=int, nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--number", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.onnxruntime:
        onnxruntime_child(args.onnxruntime, args.shape, args.repeat, args.number)
        return
    with ember.no_grad():
        for batch, context, number in ((8, 64, 3), (1, 8, 20)):
            calls, costs, onnx_bytes = prepare(batch, context)
            best = best_rounds(calls, args.repeat, number)
            ort = onnxruntime_best(onnx_bytes, batch, context, args.repeat, number)
            if ort is not None:
                best["onnxruntime"] = ort
            print(f"GPT inference, batch {batch} x context {context} (best of {args.repeat})")
            for mode in MODES:
                if mode not in best:
                    print(f"  {mode:<11} not run (pip install 'ember[onnx]')")
                    continue
                ratio = best[mode] / best["eager"]
                print(f"  {mode:<11} {best[mode] * 1e3:8.2f} ms   {ratio:5.2f}x eager")
            if onnx_bytes is None:
                del costs["onnx export"]
            print("  capture: " + ", ".join(f"{k} {v * 1e3:.0f} ms" for k, v in costs.items()))


if __name__ == "__main__":
    main()
