"""Mixed precision on the CPU: training-step time under bfloat16 autocast, ember vs PyTorch, and
the memory a step takes with and without autocast.

    python benchmarks/bench_amp.py [--steps 10] [--threads 2] [--rounds 3] [--models mlp gpt]

The models are bench_training.py's (MLP 784-512-512-10 with Adam, two-block GPT with AdamW).
Every (library, model, mode) runs in its own process, so one library's thread pools, allocator
caches and peak memory never count against the other's. Time: the median of ``--steps`` steps
(forward and loss under ``autocast("cpu", dtype=bfloat16)`` in bf16 mode, backward, optimizer
step) after a warm-up step. Memory: the peak resident set (``ru_maxrss``) minus the resident set
once the model and data exist, before the first step: the activations a step keeps for backward,
its gradients and the optimizer's state (the same in both modes). The configurations take turns
for ``--rounds`` rounds and each keeps its best, so a noisy neighbour on a shared machine slows
them all alike rather than one of them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _rss_kib() -> int:
    """The resident set now, in KiB (``/proc/self/statm``; the peak's unit)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def worker(lib_name: str, model_name: str, mode: str, steps: int, threads: int) -> dict:
    sys.path.insert(0, HERE)
    import bench_training

    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    lib.manual_seed(0)
    model, opt, x, y = bench_training.MODELS[model_name](lib.nn, lib)
    loss_fn = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        if mode == "bf16":
            with lib.autocast("cpu", dtype=lib.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    before = _rss_kib()
    step()  # warm-up: kernel tables, caches, optimizer state
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"ms": statistics.median(times) * 1e3, "peak_mib": max(peak - before, 0) / 1024}


def run(lib_name, model_name, mode, steps, threads) -> dict:
    command = [sys.executable, __file__, "--worker", lib_name, model_name, mode,
               "--steps", str(steps), "--threads", str(threads)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{lib_name} {model_name} {mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["mlp", "gpt"])
    parser.add_argument("--worker", nargs=3, metavar=("LIB", "MODEL", "MODE"))
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker, args.steps, args.threads)))
        return
    header = (f"{'model':6s} {'mode':5s} {'ember ms':>9s} {'torch ms':>9s} {'ratio':>7s} "
              f"{'ember MiB':>10s} {'torch MiB':>10s}")  # fmt: skip
    print(header)
    configs = [(m, mode, lib) for m in args.models for mode in ("fp32", "bf16")
               for lib in ("ember", "torch")]  # fmt: skip
    best: dict = {}
    for _ in range(args.rounds):
        for config in configs:
            found = run(config[2], config[0], config[1], args.steps, args.threads)
            kept = best.setdefault(config, found)
            best[config] = {key: min(kept[key], found[key]) for key in found}
    for model_name in args.models:
        for mode in ("fp32", "bf16"):
            ours, theirs = best[(model_name, mode, "ember")], best[(model_name, mode, "torch")]
            print(
                f"{model_name:6s} {mode:5s} {ours['ms']:9.2f} {theirs['ms']:9.2f} "
                f"{ours['ms'] / theirs['ms']:6.2f}x {ours['peak_mib']:10.1f} "
                f"{theirs['peak_mib']:10.1f}"
            )


if __name__ == "__main__":
    main()
