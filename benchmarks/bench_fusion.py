"""A fused elementwise chain: eager ember, compiled ember (one C kernel), PyTorch eager and
torch.compile.

    python benchmarks/bench_fusion.py [--n 1000000] [--repeats 50] [--threads 2] [--device cpu]
        [--chain gelu]

The chain is ``gelu(x * w + b) * scale + residual`` (or, ``--chain softmax``, ``softmax(x * w + b
+ residual, -1)``: rows of 1000; ``--chain ce``, ``cross_entropy(x * w + b, target)`` with one
target per row of 1000 classes, every 7th ignored; ``--chain rowsum``, softmax's backward
formula ``y * (g - sum(g * y, -1, keepdim=True))`` with ``y = x * w``, ``g`` the residual: a
row statistic in the middle of the chain) on float32 tensors of ``--n`` elements
(``w`` and ``b`` broadcast rows of 1000), run without grad. Each library and mode runs in its
own process (threads, allocators and compile caches never meet). Printed: the first call
(capture or compilation included), the second (ember.compile's first replay builds the fused
kernel, unless the disk cache has it), the median and the minimum of ``--repeats`` calls after
them (the minimum is steadier on a shared machine), with ratios against eager ember and PyTorch
eager. A process over ``--timeout`` seconds is reported as
missing (torch.compile on a small machine). ``--device cuda`` (or ``xpu``, ember only) puts the
tensors there and waits for the device after each call, so a time is the kernels' too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

RUNS = [("ember", False), ("ember", True), ("torch", False), ("torch", True)]
ROW = 1000


CHAINS = {  # --chain: what runs (``w`` and ``b`` rows of ROW, rows of ROW elements, targets)
    "gelu": ("gelu(x*w+b)*0.5+residual", lambda f, x, w, b, r, t: f.gelu(x * w + b) * 0.5 + r),
    "softmax": (
        "softmax(x*w+b+residual, -1)",
        lambda f, x, w, b, r, t: f.softmax(x * w + b + r, -1),
    ),
    "ce": ("cross_entropy(x*w+b, target)", lambda f, x, w, b, r, t: f.cross_entropy(x * w + b, t)),
    # softmax's backward formula: a row sum in the middle of the chain (feature row_steps)
    "rowsum": (
        "y*(g-sum(g*y,-1,keepdim)), y=x*w",
        lambda f, x, w, b, r, t: (x * w) * (r - (r * (x * w)).sum(-1, keepdim=True)),
    ),
}


def chain(lib, x, w, b, residual, target, name="gelu"):
    return CHAINS[name][1](lib.nn.functional, x, w, b, residual, target)


def worker(lib_name, compiled, n, repeats, threads, device, name):
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    lib.manual_seed(0)
    x, residual = lib.randn(n // ROW, ROW), lib.randn(n // ROW, ROW)
    w, b = lib.randn(ROW), lib.randn(ROW)
    target = lib.randint(0, ROW, (n // ROW,))
    target[::7] = -100  # ignored rows (cross-entropy's mask)
    x, residual, w, b, target = (t.to(device) for t in (x, residual, w, b, target))
    wait = getattr(lib, device).synchronize if device != "cpu" else lambda: None

    def fn(x, w, b, residual):
        return chain(lib, x, w, b, residual, target, name)

    def run(*args):
        out = call(*args)
        wait()
        return out

    call = lib.compile(fn) if compiled else fn
    with lib.no_grad():
        start = time.perf_counter()
        run(x, w, b, residual)
        first = time.perf_counter() - start
        start = time.perf_counter()
        run(x, w, b, residual)  # compiled: the first replay builds (or loads) the fused kernel
        second = time.perf_counter() - start
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run(x, w, b, residual)
            times.append(time.perf_counter() - start)
    return {
        "first_ms": first * 1e3,
        "second_ms": second * 1e3,
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": min(times) * 1e3,
    }


def measure(args, lib_name: str, compiled: bool) -> dict | None:
    command = [
        sys.executable, __file__, "--worker", lib_name, "--compiled", str(int(compiled)),
        "--n", str(args.n), "--repeats", str(args.repeats), "--threads", str(args.threads),
        "--device", args.device, "--chain", args.chain,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode:
        print(f"{lib_name} compiled={compiled} failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--worker")
    parser.add_argument("--compiled", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--chain", default="gelu", choices=sorted(CHAINS))
    args = parser.parse_args()
    if args.worker:
        result = worker(
            args.worker, bool(args.compiled), args.n, args.repeats, args.threads, args.device,
            args.chain,
        )  # fmt: skip
        print(json.dumps(result))
        return
    results = {(lib, c): measure(args, lib, c) for lib, c in RUNS}
    base_ember, base_torch = results[("ember", False)], results[("torch", False)]
    print(
        f"{CHAINS[args.chain][0]}, float32, n={args.n}, threads={args.threads}, "
        f"device={args.device}"
    )
    print(
        f"{'run':<16}{'first ms':>10}{'2nd ms':>9}{'median ms':>11}{'min ms':>9}"
        f"{'/ember eager':>14}{'/torch eager':>14}  (ratios of medians; of minimums)"
    )
    for (lib, compiled), found in results.items():
        label = f"{lib} {'compiled' if compiled else 'eager'}"
        if found is None:
            print(f"{label:<16}{'missing':>10}")
            continue
        ratios = [
            f"{found['median_ms'] / base['median_ms']:.2f}x;{found['min_ms'] / base['min_ms']:.2f}x"
            if base
            else "-"
            for base in (base_ember, base_torch)
        ]
        print(
            f"{label:<16}{found['first_ms']:>10.1f}{found['second_ms']:>9.1f}"
            f"{found['median_ms']:>11.3f}"
            f"{found['min_ms']:>9.3f}{ratios[0]:>14}{ratios[1]:>14}"
        )


if __name__ == "__main__":
    main()
