"""ember.distributions vs torch.distributions: sampling and log_prob time per call.

    python benchmarks/bench_distributions.py [--n 100000] [--reps 5] [--threads 1]

Each library runs in its own process (thread pools and allocator caches never mix); each case
reports the median of ``--reps`` timed calls after a warm-up, and the ratio ember / torch. The
gamma-family, Poisson and binomial samplers run ember's Philox kernels (docs/random.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# The checkout's ember (this branch), not an installed copy.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {
    "Normal.rsample": ("Normal", {"loc": 0.0, "scale": 1.0}, "rsample"),
    "Normal.log_prob": ("Normal", {"loc": 0.0, "scale": 1.0}, "log_prob"),
    "Categorical.sample": ("Categorical", {"probs": [0.2, 0.3, 0.5]}, "sample"),
    "Gamma.sample": ("Gamma", {"concentration": 2.5, "rate": 1.0}, "sample"),
    "Gamma.rsample(alpha 0.5)": ("Gamma", {"concentration": 0.5, "rate": 1.0}, "rsample"),
    "Beta.sample": ("Beta", {"concentration1": 2.0, "concentration0": 3.0}, "sample"),
    "Dirichlet.sample": ("Dirichlet", {"concentration": [0.5, 1.0, 2.0]}, "sample"),
    "Poisson.sample(rate 4)": ("Poisson", {"rate": 4.0}, "sample"),
    "Poisson.sample(rate 50)": ("Poisson", {"rate": 50.0}, "sample"),
    "Binomial.sample(n 10)": ("Binomial", {"total_count": 10.0, "probs": 0.3}, "sample"),
    "Binomial.sample(n 1000)": ("Binomial", {"total_count": 1000.0, "probs": 0.3}, "sample"),
    "Beta.log_prob": ("Beta", {"concentration1": 2.0, "concentration0": 3.0}, "log_prob"),
}


def worker(lib_name: str, n: int, reps: int, threads: int) -> dict:
    sys.path.insert(0, ROOT)
    lib = __import__(lib_name)
    lib.set_num_threads(threads)
    lib.manual_seed(0)
    dists = lib.distributions
    results = {}
    for label, (name, params, method) in CASES.items():
        args = {k: lib.tensor(v) if isinstance(v, list) else v for k, v in params.items()}
        dist = getattr(dists, name)(**args)
        if method == "log_prob":
            value = dist.sample((n,))
            call = lambda dist=dist, value=value: dist.log_prob(value)  # noqa: E731
        else:
            call = lambda dist=dist, method=method: getattr(dist, method)((n,))  # noqa: E731
        call()
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        results[label] = statistics.median(times)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--worker", default=None)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.reps, args.threads)))
        return
    runs = {}
    for lib in ("ember", "torch"):
        cmd = [sys.executable, __file__, "--worker", lib, "--n", str(args.n)]
        cmd += ["--reps", str(args.reps), "--threads", str(args.threads)]
        runs[lib] = json.loads(subprocess.run(cmd, capture_output=True, check=True).stdout)
    print(f"{'case (n=' + str(args.n) + ')':28} {'ember ms':>10} {'torch ms':>10} {'ratio':>7}")
    for label in CASES:
        e, t = runs["ember"][label] * 1e3, runs["torch"][label] * 1e3
        print(f"{label:28} {e:10.2f} {t:10.2f} {e / t:7.1f}")


if __name__ == "__main__":
    main()
