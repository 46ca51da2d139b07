"""Where a CUDA training step's time goes: host, device kernels, or waiting, per library.

    python benchmarks/cuda_step_profile.py [--lib both|ember|torch] [--steps 5] [--top 25] [--small]

On an H200 (2026-11-27) bench_cuda.py's GPT step (d_model 768, 12 heads, 6 layers, seq 256,
batch 16) took 102 ms in ember against PyTorch's 29, with GEMMs at PyTorch's speed and a tiny op
at 1.75x: the step was not profiled there. This script is that profile, for the next device run,
with each library in its own process (``--lib both`` starts one per library):

- wall: a step with the device synchronised after it (median of ``--steps``);
- host: the same step's time until its Python returns, before that synchronisation. A step
  that never waits for the device returns once every launch is queued, so host close to wall
  says the host is the bound; ember's step also waits where it copies a value to the host;
- kernels: the sum of the step's kernel times on the device, from CUPTI through
  ``torch.profiler``, which records every kernel the process launches, ember's included (CUPTI
  traces the process, not a library); kernels close to wall says the device is the bound, and
  the table of the ``--top`` kernels by total time says which.

ember never imports torch; this diagnostic does, in ember's process, only to read CUPTI. Without
a CUDA device it says so and exits 0 (the emulator has no kernel clock to report).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

# bench_cuda.py's GPT; --small is a shape the CUDA emulator runs in seconds (checks the script)
SIZES = {
    False: dict(d=768, heads=12, layers=6, seq=256, batch=16),
    True: dict(d=64, heads=4, layers=2, seq=32, batch=4),
}


def _step(lib, small: bool):
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_training import gpt as build

    lib.manual_seed(0)
    model, opt, x, y = build(lib.nn, lib, "cuda", **SIZES[small])

    def step():
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def _kernel_table(step, sync, top: int) -> None:
    """One profiled step's kernels, by total device time, and their sum."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        print("kernels: torch is not installed here (its profiler reads CUPTI)")
        return
    if not torch.cuda.is_available():
        print("kernels: torch sees no CUDA device (no CUPTI to read)")
        return
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        sync()
    rows = []
    for event in prof.key_averages():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        total = getattr(event, "self_device_time_total", None)
        if total is None:  # older releases' name
            total = event.self_cuda_time_total
        rows.append((total / 1e3, event.count, event.key))
    rows.sort(reverse=True)
    print(f"kernels: {sum(r[0] for r in rows):.2f} ms on the device in {sum(r[1] for r in rows)} "
          f"launches of {len(rows)} kernels")  # fmt: skip
    for ms, count, name in rows[:top]:
        print(f"  {ms:9.3f} ms {count:6d}x  {name[:110]}")


def profile_one(name: str, steps: int, top: int, small: bool) -> None:
    if name == "ember":
        import ember as lib

        if not lib.cuda.is_available():
            print(f"ember: no CUDA device ({lib.cuda.unavailable_reason()}): nothing to profile")
            return
    else:
        import torch as lib

        if not lib.cuda.is_available():
            print("torch: no CUDA device: nothing to profile")
            return
        lib.backends.cuda.matmul.allow_tf32 = False
    step, sync = _step(lib, small), lib.cuda.synchronize
    for _ in range(3):
        step()
    sync()
    walls, hosts = [], []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        hosts.append(time.perf_counter() - start)
        sync()
        walls.append(time.perf_counter() - start)
    wall, host = statistics.median(walls) * 1e3, statistics.median(hosts) * 1e3
    shape = " ".join(f"{k} {v}" for k, v in SIZES[small].items())
    print(f"{name}: GPT step ({shape}): wall {wall:.2f} ms, host {host:.2f} ms")
    _kernel_table(step, sync, top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", choices=("both", "ember", "torch"), default="both")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--small", action="store_true", help="a GPT the emulator runs quickly")
    args = parser.parse_args()
    if args.lib != "both":
        profile_one(args.lib, args.steps, args.top, args.small)
        return 0
    for name in ("ember", "torch"):  # each in its own process: their pools and caches apart
        command = [sys.executable, __file__, "--lib", name, "--steps", str(args.steps),
                   "--top", str(args.top)] + ["--small"] * args.small  # fmt: skip
        subprocess.run(command, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
