"""Data loading, tensor sharing and checkpoints, ember vs PyTorch, each job in its own process.

    python benchmarks/bench_data.py [--workers 2] [--only loader,transport,queue,checkpoint]

1. loader: one epoch over 4096 float32 images of 3x32x32, batch 64, shuffled, with 0 and
   ``--workers`` workers (persistent, so worker start-up is not counted).
2. transport: what shared memory gains in handing batches from workers to the main process:
   an epoch of 6 MiB batches (32 images of 3x128x128) with ``--workers`` forked workers, through
   ember's shared-memory transport, through the same loader sending pickled bytes instead (the
   transport it replaced), and through PyTorch's DataLoader.
3. queue: a producer process puts 64 fresh 4 MiB tensors on a queue the main process reads:
   ember.multiprocessing under both sharing strategies, the standard library's queue (tensors
   pickled by value: no ember.multiprocessing) and torch.multiprocessing.
4. checkpoint: a 256 MiB state dict of 64 matrices and 5000 tiny tensors through ember.save/load
   vs torch.save/load, and both safetensors implementations.

Best of 3 of each; the machine may be shared, so compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


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


def library(name: str):
    """The tensor library of a job; PyTorch on one thread, as ember's workers run."""
    if name.startswith("torch"):
        import torch

        torch.set_num_threads(1)
        return torch
    import ember

    return ember


def make_loader(m, images: np.ndarray, batch: int, workers: int, **kwargs):
    x, y = m.from_numpy(images), m.from_numpy(np.arange(len(images)))
    data = m.utils.data.TensorDataset(x, y)
    if workers:
        kwargs.update(persistent_workers=True)
    return m.utils.data.DataLoader(data, batch_size=batch, num_workers=workers, **kwargs)


# ---- jobs: each runs in a process of its own and prints {label: ms} ------------------------
def job_loader(lib: str, workers: int) -> dict:
    m = library(lib)
    images = np.random.rand(4096, 3, 32, 32).astype(np.float32)
    out = {}
    for count in sorted({0, workers}):
        loader = make_loader(m, images, 64, count, shuffle=True)
        out[f"DataLoader epoch, {count} workers"] = best_ms(epoch, loader)
    return out


def _pickled_transport() -> None:
    """Batches cross as pickled bytes through the pipe (ember's transport before shared memory)."""
    from ember.utils.data import _shared_memory

    _shared_memory.pack = lambda obj: pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    _shared_memory.unpack = pickle.loads
    _shared_memory.discard = lambda message: None


def job_transport(lib: str, workers: int) -> dict:
    m = library(lib)
    if lib == "ember-pickled":
        _pickled_transport()  # before the workers fork, so that they send bytes too
    images = np.random.rand(512, 3, 128, 128).astype(np.float32)
    loader = make_loader(m, images, 32, workers, multiprocessing_context="fork")
    return {f"6 MiB batches, {workers} workers": best_ms(epoch, loader)}


def _produce(mp_name: str, queue, count: int, numel: int, done) -> None:
    m = library("torch" if mp_name.startswith("torch") else "ember")
    for i in range(count):
        queue.put(m.full((numel,), float(i)))
    done.wait()  # descriptors are handed over by this process: stay until all are read


def job_queue(lib: str, workers: int) -> dict:
    if lib == "stdlib":
        import multiprocessing as mp
    elif lib == "torch":
        import torch.multiprocessing as mp
    else:
        import ember.multiprocessing as mp

        mp.set_sharing_strategy(lib.split("-", 1)[1])
    library(lib)
    ctx = mp.get_context("fork")
    count, numel = 64, 1 << 20

    def run():
        queue, done = ctx.Queue(), ctx.Event()
        producer = ctx.Process(target=_produce, args=(lib, queue, count, numel, done))
        producer.start()
        total = sum(float(queue.get()[0]) for _ in range(count))
        done.set()
        producer.join()
        assert total == count * (count - 1) / 2

    return {"64 tensors of 4 MiB through a queue": best_ms(run)}


def job_checkpoint(lib: str, workers: int) -> dict:
    m = library(lib)
    arrays = {f"layer{i}.weight": np.random.rand(1024, 1024).astype(np.float32) for i in range(64)}
    big = {k: m.from_numpy(v) for k, v in arrays.items()}
    small = {f"p{i}": m.ones(4) for i in range(5000)}
    if lib == "torch":
        import safetensors.torch as st

        load = lambda p: m.load(p, weights_only=True)  # noqa: E731
    else:
        from ember import safetensors as st

        load = m.load
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "state")
        for label, state in (("256 MiB", big), ("5000 tiny tensors", small)):
            out[f"save {label}"] = best_ms(m.save, state, path)
            out[f"load {label}"] = best_ms(load, path)
        out["safetensors save_file 256 MiB"] = best_ms(st.save_file, big, path)
        out["safetensors load_file 256 MiB"] = best_ms(st.load_file, path)
    return out


JOBS = {
    "loader": (job_loader, ["ember", "torch"]),
    "transport": (job_transport, ["ember", "ember-pickled", "torch"]),
    "queue": (job_queue, ["ember-file_descriptor", "ember-file_system", "stdlib", "torch"]),
    "checkpoint": (job_checkpoint, ["ember", "torch"]),
}


def run_job(name: str, lib: str, workers: int) -> dict:
    argv = [sys.executable, HERE, "--job", name, lib, "--workers", str(workers)]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    )
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode:
        raise RuntimeError(f"job {name} {lib} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(name: str, results: dict) -> None:
    libs = list(results)
    base = libs[0]
    print(f"\n{name}: " + ", ".join(libs) + f" (ratio: time / {libs[-1]}'s)")
    for label in results[base]:
        cells = [f"{lib} {results[lib][label]:8.1f} ms" for lib in libs]
        ratios = [f"{results[lib][label] / results[libs[-1]][label]:5.2f}" for lib in libs[:-1]]
        print(f"  {label:40s} " + "   ".join(cells) + "   ratio " + " ".join(ratios))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", default=",".join(JOBS))
    parser.add_argument("--job", nargs=2, metavar=("NAME", "LIB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        name, lib = args.job
        print(json.dumps(JOBS[name][0](lib, args.workers)))
        return
    for name in args.only.split(","):
        libs = JOBS[name][1]
        report(name, {lib: run_job(name, lib, args.workers) for lib in libs})


if __name__ == "__main__":
    main()
