"""Training-step time: eager ember, compiled ember, PyTorch eager, torch.compile.

    python benchmarks/bench_compile.py [--steps 20] [--threads 2] [--models tiny mlp cnn gpt]
    python benchmarks/bench_compile.py --interleaved --steps 300 --models tiny
    python benchmarks/bench_compile.py --interleaved --models tiny --forward \
        --modes eager default reduce-overhead
    python benchmarks/bench_compile.py --optimizers --steps 500 --threads 1
    python benchmarks/bench_compile.py --whole-step [--interleaved] --steps 300 --models tiny

Each (library, mode, model) runs in its own process (so one library's threads, allocator and
compile caches never touch another's), builds the model of bench_training.py, compiles the
model with ``ember.compile`` / ``torch.compile`` in the compiled modes (the loss, backward and
optimizer step stay eager, as in nanoGPT's ``model = torch.compile(model)``), times the first
step (capture or compilation included) and the median of ``--steps`` steps after it, and prints
ratios against eager ember and PyTorch eager. ``tiny`` is a per-op-bound MLP (width 32, batch 8).
A process over ``--timeout`` seconds (torch.compile's first compilation can be slow on small
machines) is reported as missing. ``--whole-step``: the compiled modes compile the whole
training step instead (``zero_grad``, forward, loss, ``backward()``, ``opt.step()`` as one
region, compiler/train_region.py; torch.compile breaks its graph at the backward).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_training import MODELS  # the same models as the training benchmark


def tiny(nn, lib):
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(32, 32), nn.GELU())])
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    return model, opt, lib.randn(8, 32), lib.randint(0, 32, (8,))


ALL = {"tiny": tiny, **MODELS}
RUNS = [("ember", False), ("ember", True), ("torch", False), ("torch", True)]


def training_step(lib, model_name: str, mode: str | None, whole: bool):
    """``(step, optimizer)``: a training step of ``model_name``, eager (``mode`` None), its model
    compiled in ``mode``, or (``whole``) the step itself compiled as one region."""
    model, opt, x, y = ALL[model_name](lib.nn, lib)
    run = model if mode is None or whole else lib.compile(model, mode=mode)

    def step():
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        return loss

    return (lib.compile(step, mode=mode) if mode is not None and whole else step), opt


def worker(lib_name: str, compiled: bool, model_name: str, args) -> dict:
    lib = __import__(lib_name)
    lib.set_num_threads(args.threads)
    lib.manual_seed(0)
    step, _ = training_step(lib, model_name, "default" if compiled else None, args.whole_step)

    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"first": first, "median": statistics.median(times)}


def interleaved(model_name: str, steps: int, threads: int, args) -> None:
    """Eager and compiled ember steps alternated in one process (``--interleaved``): on a shared
    machine whose load changes from second to second, the ratio of the medians is steadier than
    that of processes run minutes apart. ``--modes``: eager and ember.compile modes to compare;
    ``--forward``: time the model's no-grad forward alone; ``--compile-step``: the compiled
    modes also run ``opt.step = ember.compile(opt.step)``."""
    import ember

    ember.set_num_threads(threads)
    runs = {}
    for mode in args.modes:
        ember.manual_seed(0)
        if args.forward:
            model, _, x, _ = ALL[model_name](ember.nn, ember)
            run = model if mode == "eager" else ember.compile(model, mode=mode)

            def call(run=run, x=x):
                with ember.no_grad():
                    run(x)

        else:
            compiled = None if mode == "eager" else mode
            call, opt = training_step(ember, model_name, compiled, args.whole_step)
            if mode != "eager" and args.compile_step and not args.whole_step:
                opt.step = ember.compile(opt.step)
        for _ in range(3):  # capture, build the compiled pair, first replay
            call()
        runs[mode] = (call, [])
    for _ in range(steps):
        for call, times in runs.values():
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
    what = "no-grad forward" if args.forward else "training step"
    what += " (the whole step compiled)" * (args.whole_step and not args.forward)
    medians = {mode: statistics.median(times) * 1e3 for mode, (_, times) in runs.items()}
    base = medians.get("eager")
    for mode, ms in medians.items():
        ratio = f" ({ms / base:.2f}x eager)" if base else ""
        print(f"{model_name} {mode}: {ms:.3f} ms per {what}{ratio}")
    print(f"(medians of {steps} interleaved calls)")


OPTIMIZERS = [
    ("SGD", {}), ("SGD", {"momentum": 0.9}), ("Adam", {}), ("AdamW", {"amsgrad": True}),
    ("RMSprop", {}), ("RMSprop", {"momentum": 0.9, "centered": True}), ("Adagrad", {}),
    ("Adamax", {}), ("NAdam", {}), ("RAdam", {}), ("Adadelta", {}), ("ASGD", {}), ("Rprop", {}),
]  # fmt: skip


def optimizer_steps(steps: int, threads: int, device: str = "cpu") -> None:
    """``--optimizers``: the ``tiny`` model's optimizer step alone, eager, ``fused=True`` (where
    the class takes it) and ``opt.step = ember.compile(opt.step)``, alternated call by call
    (gradients kept); on another ``--device``, each call waits for the device."""
    import inspect

    import ember

    ember.set_num_threads(threads)
    wait = getattr(ember, device).synchronize if device != "cpu" else lambda: None
    for name, kw in OPTIMIZERS:
        cls = getattr(ember.optim, name)
        modes = ["eager", "compiled"]
        if "fused" in inspect.signature(cls).parameters:
            modes.insert(1, "fused")
        calls = {}
        for mode in modes:
            ember.manual_seed(0)
            model, _, x, _ = tiny(ember.nn, ember)
            model.to(device)
            x = x.to(device)
            extra = {"fused": True} if mode == "fused" else {}
            opt = cls(model.parameters(), lr=0.01, **extra, **kw)
            model(x).sum().backward()
            if mode == "compiled":
                opt.step = ember.compile(opt.step)
            for _ in range(3):
                opt.step()
            calls[mode] = (opt.step, [])
        for _ in range(steps):
            for call, times in calls.values():
                start = time.perf_counter()
                call()
                wait()
                times.append(time.perf_counter() - start)
        us = {mode: statistics.median(times) * 1e6 for mode, (_, times) in calls.items()}
        print(f"{name} {kw}: " + ", ".join(f"{mode} {t:.0f} us" for mode, t in us.items()))


def measure(lib: str, compiled: bool, model: str, args) -> dict | None:
    command = [sys.executable, __file__, "--worker", lib, str(int(compiled)), model]
    command += ["--steps", str(args.steps), "--threads", str(args.threads)]
    command += ["--whole-step"] * args.whole_step
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"  {lib} {'compiled' if compiled else 'eager'} {model}: over {args.timeout} s")
        return None
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "?"
        print(f"  {lib} {'compiled' if compiled else 'eager'} {model}: failed ({last})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="+", default=list(ALL), choices=list(ALL))
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process")
    parser.add_argument("--worker", nargs=3, metavar=("LIB", "COMPILED", "MODEL"))
    parser.add_argument(
        "--interleaved", action="store_true", help="eager vs compiled ember in one process"
    )
    parser.add_argument("--optimizers", action="store_true", help="compiled optimizer steps")
    parser.add_argument("--device", default="cpu", help="--optimizers: where the model lives")
    parser.add_argument("--modes", nargs="+", default=["eager", "default"], help="--interleaved")
    parser.add_argument("--forward", action="store_true", help="--interleaved: no-grad forward")
    parser.add_argument(
        "--whole-step", action="store_true", help="compile the whole training step as one region"
    )
    parser.add_argument(
        "--compile-step", action="store_true", help="--interleaved: compile opt.step too"
    )
    args = parser.parse_args(argv)
    if args.optimizers:
        optimizer_steps(args.steps, args.threads, args.device)
        return
    if args.interleaved:
        for model in args.models:
            interleaved(model, args.steps, args.threads, args)
        return
    if args.worker:
        lib, compiled, model = args.worker
        print(json.dumps(worker(lib, compiled == "1", model, args)))
        return
    header = f"{'model':6s} {'ember':>9s} {'compiled':>9s} {'torch':>9s} {'t.compile':>9s}"
    print(header + f" {'c/ember':>8s} {'c/torch':>8s} {'1st call':>9s}   (ms per step)")
    for model in args.models:
        found = [measure(lib, compiled, model, args) for lib, compiled in RUNS]
        ms = [f"{r['median'] * 1e3:9.2f}" if r else f"{'n/a':>9s}" for r in found]
        ours, compiled = found[0], found[1]
        c_e = compiled["median"] / ours["median"] if ours and compiled else float("nan")
        c_t = compiled["median"] / found[2]["median"] if found[2] and compiled else float("nan")
        first = f"{compiled['first']:8.2f}s" if compiled else "n/a"
        print(f"{model:6s} {' '.join(ms)} {c_e:7.2f}x {c_t:7.2f}x {first:>9s}")


if __name__ == "__main__":
    main()
