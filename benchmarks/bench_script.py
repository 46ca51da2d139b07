"""ember.jit.script: compile time and the latency of a scripted LSTM cell unrolled by a for
loop over time steps (the acceptance model of tests/jit/test_script_modules.py), eager vs
scripted, ember vs torch:

    python benchmarks/bench_script.py [--repeat 7] [--steps 16]

Each library runs in its own process (``--lib torch`` is the child); within one process eager
and scripted take turns round by round and each figure is the best round. Ratios are against
eager ember.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's ember, not an older installed copy


def measure(lib_name: str, repeat: int, steps: int) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    lib = __import__(lib_name)
    from tests.jit.script_models import build  # the models, written once for both libraries

    model = build(lib)[2](n_in=16, hidden=32).eval()
    xs = lib.randn(steps, 4, 16)
    lib.jit.script(build(lib)[2](n_in=16, hidden=32))  # imports and caches: not compile time
    start = time.perf_counter()
    scripted = lib.jit.script(model)
    compile_s = time.perf_counter() - start
    best = {"eager": float("inf"), "scripted": float("inf")}
    with lib.no_grad():
        for _ in range(repeat):
            for mode, fn in (("eager", model), ("scripted", scripted)):
                start = time.perf_counter()
                for _ in range(10):
                    fn(xs)
                best[mode] = min(best[mode], (time.perf_counter() - start) / 10)
    return {"compile": compile_s, **best}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--lib", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lib:
        print(json.dumps(measure(args.lib, args.repeat, args.steps)))
        return
    ours = measure("ember", args.repeat, args.steps)
    child = [sys.executable, __file__, "--lib", "torch", "--repeat", str(args.repeat)]
    child += ["--steps", str(args.steps)]
    torch_run = subprocess.run(child, capture_output=True, text=True, check=True)
    theirs = json.loads(torch_run.stdout.strip().splitlines()[-1])
    base = ours["eager"]
    print(f"LSTM loop, {args.steps} steps, batch 4, hidden 32 (best of {args.repeat} rounds)")
    print(f"{'':16}{'ms/call':>10}{'vs eager ember':>16}{'compile ms':>12}")
    for name, run in (("ember", ours), ("torch", theirs)):
        for mode in ("eager", "scripted"):
            compile_ms = f"{run['compile'] * 1e3:.1f}" if mode == "scripted" else ""
            row = f"{name} {mode:10}{run[mode] * 1e3:10.3f}{run[mode] / base:16.2f}"
            print(f"{row}{compile_ms:>12}")


if __name__ == "__main__":
    main()
