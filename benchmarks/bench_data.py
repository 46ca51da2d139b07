"""Data loading and checkpoints, ember vs PyTorch, on the same data (CPU).

    python benchmarks/bench_data.py [--workers 2]

DataLoader: one epoch over 4096 float32 images of 3x32x32, batch 64, shuffled (persistent
workers, so worker start-up is not counted). Checkpoints: a 256 MiB state dict of 64 float32
matrices, and 5000 tiny tensors, through ember.save/load vs torch.save/load and both safetensors
implementations. Best of 3; the machine may be shared, so compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import torch

import ember
from ember import safetensors as ember_st
from ember.utils.data import DataLoader, TensorDataset


def best_ms(fn, *args, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def epoch(loader) -> None:
    for _ in loader:
        pass


def loaders(workers: int):
    x = np.random.rand(4096, 3, 32, 32).astype(np.float32)
    y = np.arange(4096)
    kwargs = {"batch_size": 64, "shuffle": True, "num_workers": workers}
    if workers:
        kwargs["persistent_workers"] = True
    ours = DataLoader(TensorDataset(ember.from_numpy(x), ember.from_numpy(y)), **kwargs)
    tds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    return ours, torch.utils.data.DataLoader(tds, **kwargs)


def report(name: str, ours: float, theirs: float) -> None:
    print(f"{name:48s} ember {ours:8.1f} ms   torch {theirs:8.1f} ms   ratio {ours / theirs:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for workers in sorted({0, args.workers}):
        ours, theirs = loaders(workers)
        report(
            f"DataLoader epoch, {workers} workers",
            best_ms(epoch, ours),
            best_ms(epoch, theirs),
        )

    arrays = {f"layer{i}.weight": np.random.rand(1024, 1024).astype(np.float32) for i in range(64)}
    big = (
        {k: ember.from_numpy(v) for k, v in arrays.items()},
        {k: torch.from_numpy(v) for k, v in arrays.items()},
    )
    small = (
        {f"p{i}": ember.ones(4) for i in range(5000)},
        {f"p{i}": torch.ones(4) for i in range(5000)},
    )
    import safetensors.torch as torch_st

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state")
        for label, (ours, theirs) in (("256 MiB", big), ("5000 tiny tensors", small)):
            report(
                f"save {label}",
                best_ms(ember.save, ours, path),
                best_ms(torch.save, theirs, path),
            )
            ember.save(ours, path)
            report(
                f"load {label} (file written by ember)",
                best_ms(ember.load, path),
                best_ms(lambda p: torch.load(p, weights_only=True), path),
            )
        ours, theirs = big
        report(
            "safetensors save_file 256 MiB",
            best_ms(ember_st.save_file, ours, path),
            best_ms(torch_st.save_file, theirs, path),
        )
        report(
            "safetensors load_file 256 MiB (package mmaps)",
            best_ms(ember_st.load_file, path),
            best_ms(torch_st.load_file, path),
        )


if __name__ == "__main__":
    main()
