"""The variable-draw Philox samplers (_standard_gamma, poisson, binomial) on a device: its own
kernel against the CPU fallback they used to take (copy the parameters to the CPU, run the CPU
kernel, copy the result back, as the dispatcher's fallback does).

    python benchmarks/bench_samplers.py --device xpu [--n 1000000] [--reps 5]
    EMBER_CUDA_EMULATOR=1 python benchmarks/bench_samplers.py --device cuda --n 100000

Each time is the median of ``--reps`` calls after a warm-up call (which compiles the kernels),
synchronised with the device; the output is one line per case in million samples per second.
On a machine without a GPU, xpu is PoCL on the same CPU cores as the fallback.
"""

from __future__ import annotations

import argparse
import statistics
import time

import ember

CASES = {
    "gamma(alpha 0.5)": ("_standard_gamma", (0.5,)),
    "gamma(alpha 4)": ("_standard_gamma", (4.0,)),
    "poisson(rate 4)": ("poisson", (4.0,)),
    "poisson(rate 50)": ("poisson", (50.0,)),
    "binomial(n 10, p 0.3)": ("binomial", (10.0, 0.3)),
    "binomial(n 1000, p 0.3)": ("binomial", (1000.0, 0.3)),
}


def median_time(call, sync, reps: int) -> float:
    call()
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="xpu")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    dtype = getattr(ember, args.dtype)
    sync = getattr(ember, args.device).synchronize
    print(f"{args.device} {args.dtype}, n = {args.n}: million samples / s (median of {args.reps})")
    print(f"{'case':26} {'kernel':>10} {'fallback':>10} {'speed-up':>9}")
    for label, (name, values) in CASES.items():
        op = getattr(ember, name)
        params = [ember.full((args.n,), v, dtype=dtype, device=args.device) for v in values]
        native = median_time(lambda op=op, params=params: op(*params), sync, args.reps)
        back = lambda op=op, params=params: op(*(p.cpu() for p in params)).to(args.device)  # noqa: E731
        fallback = median_time(back, sync, args.reps)
        rate, base = args.n / native / 1e6, args.n / fallback / 1e6
        print(f"{label:26} {rate:10.2f} {base:10.2f} {fallback / native:8.2f}x")


if __name__ == "__main__":
    main()
