"""ember's CPU indexing and sorting kernels against numpy, one row per case.

    python benchmarks/bench_index_kernels.py [--repeat N] [--threads N]

Times are the best of N runs through the public API (dispatch included), in milliseconds.
A case whose ember call needs a kernel this build lacks is shown as unavailable.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from ember_backend_cpu._kernels import lib as cpu_lib

import ember


def best_ms(fn, repeat: int) -> float:
    fn()  # warm up: kernel lookup, allocator, page faults
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def cases(rng) -> list:
    """(name, ember call, numpy call) for each case."""
    f32 = rng.standard_normal(1 << 20).astype(np.float32)
    i64 = rng.integers(-(2**62), 2**62, 1 << 20)
    rows = rng.standard_normal((1000, 1000)).astype(np.float32)
    wide = rng.standard_normal((4096, 512)).astype(np.float32)
    pick = rng.integers(0, 4096, 4096)
    gather_idx = rng.integers(0, 1000, (1000, 1000))
    flat_idx = rng.integers(0, 1 << 20, 1 << 20)
    add_idx = rng.integers(0, 1000, (1000, 1000))
    mask = f32 > 0.5
    seq = np.sort(rng.standard_normal(1 << 16)).astype(np.float32)
    e = {
        name: ember.from_numpy(a)
        for name, a in dict(
            f32=f32, i64=i64, rows=rows, wide=wide, pick=pick, gather_idx=gather_idx,
            flat_idx=flat_idx, add_idx=add_idx, mask=mask, seq=seq,
        ).items()
    }  # fmt: skip
    zeros = ember.zeros(1000, 1000)
    return [
        ("sort 1M float32", lambda: ember.sort(e["f32"]), lambda: np.sort(f32)),
        (
            "sort 1M float32 (values+indices vs argsort)",
            lambda: ember.sort(e["f32"]),
            lambda: np.argsort(f32, kind="stable"),
        ),
        ("sort 1M int64", lambda: ember.sort(e["i64"]), lambda: np.sort(i64)),
        ("sort 1000x1000 float32 dim=1", lambda: ember.sort(e["rows"], 1), lambda: np.sort(rows)),
        (
            "sort 1000x1000 float32 dim=0",
            lambda: ember.sort(e["rows"], 0),
            lambda: np.sort(rows, 0),
        ),
        (
            "topk 1M float32 k=10",
            lambda: ember.topk(e["f32"], 10),
            lambda: np.argpartition(f32, -10)[-10:],
        ),
        (
            "gather 1000x1000 dim=1",
            lambda: ember.gather(e["rows"], 1, e["gather_idx"]),
            lambda: np.take_along_axis(rows, gather_idx, 1),
        ),
        (
            "index_select 4096 rows of 512",
            lambda: ember.index_select(e["wide"], 0, e["pick"]),
            lambda: np.take(wide, pick, 0),
        ),
        (
            "index_select 4096x512 dim=1",
            lambda: ember.index_select(e["wide"], 1, e["pick"][:512] % 512),
            lambda: np.take(wide, pick[:512] % 512, 1),
        ),
        (
            "scatter_add 1000x1000 dim=0",
            lambda: ember.scatter_add(zeros, 0, e["add_idx"], e["rows"]),
            lambda: np.add.at(np.zeros((1000, 1000), np.float32), (add_idx, np.arange(1000)), rows),
        ),
        (
            "take 1M of 1M",
            lambda: ember.take(e["f32"], e["flat_idx"]),
            lambda: np.take(f32, flat_idx),
        ),
        (
            "put_ 1M into 1M",
            lambda: e["f32"].clone().put_(e["flat_idx"], e["f32"]),
            lambda: np.put(f32.copy(), flat_idx, f32),
        ),
        ("nonzero 1M bool", lambda: ember.nonzero(e["mask"]), lambda: np.argwhere(mask)),
        (
            "searchsorted 1M in 64K",
            lambda: ember.searchsorted(e["seq"], e["f32"]),
            lambda: np.searchsorted(seq, f32),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        cpu_lib.ember_set_num_threads(args.threads)  # ember has no public thread knob yet
    print(f"threads: {cpu_lib.ember_num_threads()}, best of {args.repeat}, milliseconds")
    print(f"{'case':46s} {'ember':>9s} {'numpy':>9s} {'ember/numpy':>12s}")
    for name, ember_call, numpy_call in cases(np.random.default_rng(0)):
        reference = best_ms(numpy_call, args.repeat)
        try:
            ours = best_ms(ember_call, args.repeat)
        except NotImplementedError as err:
            print(f"{name:46s} {'n/a':>9s} {reference:9.2f}   ({str(err).split('.')[0]})")
            continue
        print(f"{name:46s} {ours:9.2f} {reference:9.2f} {ours / reference:11.2f}x")


if __name__ == "__main__":
    main()
