"""The foundation's performance targets, ember vs PyTorch CPU vs numpy in one run.

    python benchmarks/bench_ops.py [--repeat 7] [--threads 2]

- a tiny op (``x + y`` on 16 float32 elements, no grad): per-call time; target <= 3x PyTorch;
- ``matmul`` float32 at n=1024 and 2048: GFLOPS; target >= 95% of numpy's;
- ``a * b + a`` and ``sum`` on 16M float32: GB/s of input read; target >= numpy's.

Each figure is the best of ``--repeat`` rounds (the minimum is the least disturbed by other load on
a shared machine). Ratios are ember / reference: below 1 is faster for times, above 1 for rates.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def best(fn, number: int, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times)


def row(name: str, unit: str, ours: float, torch_v, numpy_v) -> None:
    """One line: the three figures and ember / reference ratios."""

    def ratio(ref):
        if ref is None or ref != ref:
            return "     n/a"
        return f"{ours / ref:7.2f}x"

    fmt = lambda v: "       n/a" if v is None else f"{v:10.3f}"  # noqa: E731
    print(
        f"{name:28s} {unit:7s} {fmt(ours)} {fmt(torch_v)} {fmt(numpy_v)} "
        f"{ratio(torch_v)} {ratio(numpy_v)}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import ember

    ember.set_num_threads(args.threads)
    try:
        import torch

        torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    print(
        f"{'benchmark':28s} {'unit':7s} {'ember':>10s} {'torch':>10s} {'numpy':>10s} "
        f"{'vs torch':>8s} {'vs numpy':>8s}"
    )

    x, y = ember.ones(16), ember.ones(16)
    tiny = best(lambda: x + y, 20000, args.repeat) * 1e6
    tiny_t = None
    if torch:
        tx, ty = torch.ones(16), torch.ones(16)
        tiny_t = best(lambda: tx + ty, 20000, args.repeat) * 1e6
    nx, ny = np.ones(16, np.float32), np.ones(16, np.float32)
    tiny_n = best(lambda: nx + ny, 20000, args.repeat) * 1e6
    row("x + y, 16 float32", "us", tiny, tiny_t, tiny_n)

    for n in (1024, 2048):
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        ea = ember.from_numpy(a)
        flops = 2 * n**3 / 1e9
        ours = flops / best(lambda ea=ea: ea @ ea, 3, args.repeat)
        theirs = None
        if torch:
            ta = torch.from_numpy(a)
            theirs = flops / best(lambda ta=ta: ta @ ta, 3, args.repeat)
        mine = flops / best(lambda a=a: a @ a, 3, args.repeat)
        row(f"matmul {n} float32", "GFLOPS", ours, theirs, mine)

    size = 16 * 1024 * 1024
    a = np.random.default_rng(1).standard_normal(size, dtype=np.float32)
    b = np.random.default_rng(2).standard_normal(size, dtype=np.float32)
    ea, eb = ember.from_numpy(a), ember.from_numpy(b)
    gb = 2 * size * 4 / 1e9
    ours = gb / best(lambda: ea * eb + ea, 3, args.repeat)
    theirs = None
    if torch:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        theirs = gb / best(lambda: ta * tb + ta, 3, args.repeat)
    mine = gb / best(lambda: a * b + a, 3, args.repeat)
    row("a * b + a, 16M float32", "GB/s", ours, theirs, mine)

    gb = size * 4 / 1e9
    ours = gb / best(lambda: ea.sum(), 5, args.repeat)
    theirs = gb / best(lambda: ta.sum(), 5, args.repeat) if torch else None
    mine = gb / best(lambda: a.sum(), 5, args.repeat)
    row("sum, 16M float32", "GB/s", ours, theirs, mine)


if __name__ == "__main__":
    main()
