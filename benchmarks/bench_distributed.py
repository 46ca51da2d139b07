"""ember.distributed: all_reduce bus bandwidth against MPI's own, and DDP's step overhead.

    python benchmarks/bench_distributed.py [--ranks 2] [--max-mb 256] [--steps 20] [--nccl]

1. all_reduce, osu_allreduce-style: for messages of 1 KB to ``--max-mb`` MB (float32), the
   median time of ``MPI_Allreduce`` called directly through mpi4py (the MPI library's own
   figure; that job never imports ember) and of ``ember.distributed.all_reduce`` on a tensor,
   each in its own ``emberrun`` job; algorithm and bus bandwidth (busbw = algbw * 2(n-1)/n,
   as nccl-tests define it) and the ember/MPI time ratio.
2. DDP overhead on the anchors' MLP (784-512-512-10, Adam, batch 128; bench_training.py): the
   step time of DDP on 2 ranks with 64 rows each against one process with 64 rows.
3. ``--nccl`` (on a GPU machine): the same all_reduce sweep on one GPU through NCCL (1 rank).

Ranks run with one thread each (2 ranks on a 2-core machine would otherwise oversubscribe).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))


def sizes(max_mb: int) -> list[int]:
    out, size = [], 1024
    while size <= max_mb * 1024 * 1024:
        out.append(size)
        size *= 4
    return out


def _iterations(nbytes: int) -> int:
    return int(max(5, min(200, 2e8 / nbytes)))


def _median_time(run, iterations: int, barrier) -> float:
    run()  # warm-up
    times = []
    for _ in range(iterations):
        barrier()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def job_mpi(max_mb: int) -> None:
    """Rank program: MPI_Allreduce through mpi4py on numpy arrays (no ember)."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    for nbytes in sizes(max_mb):
        buf = np.ones(nbytes // 4, dtype=np.float32)
        seconds = _median_time(
            lambda buf=buf: comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM),
            _iterations(nbytes),
            comm.Barrier,
        )
        if comm.rank == 0:
            print(json.dumps({"bytes": nbytes, "seconds": seconds, "ranks": comm.size}))


def job_ember(max_mb: int, device: str = "cpu") -> None:
    """Rank program: ember.distributed.all_reduce on tensors."""
    import ember
    import ember.distributed as dist

    dist.init_process_group("mpi" if device == "cpu" else "nccl")
    for nbytes in sizes(max_mb):
        t = ember.ones(nbytes // 4, device=device)

        def run(t=t):
            dist.all_reduce(t)
            if device != "cpu":
                getattr(ember, device).synchronize()

        seconds = _median_time(run, _iterations(nbytes), dist.barrier)
        if dist.get_rank() == 0:
            print(json.dumps({"bytes": nbytes, "seconds": seconds, "ranks": dist.get_world_size()}))
    dist.destroy_process_group()


def job_ddp(steps: int) -> None:
    """Rank program: the anchors' MLP with 64 rows per rank, under DDP when launched on
    several ranks, plain otherwise."""
    import ember
    import ember.distributed as dist
    from ember import nn

    ember.set_num_threads(1)
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    ember.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )
    barrier = lambda: None  # noqa: E731
    if ranks > 1:
        dist.init_process_group("mpi")
        model = nn.parallel.DistributedDataParallel(model)
        barrier = dist.barrier
    opt = ember.optim.Adam(model.parameters(), lr=1e-3)
    x, y = ember.randn(64, 784), ember.randint(0, 10, (64,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    seconds = _median_time(step, steps, barrier)
    if ranks == 1 or dist.get_rank() == 0:
        print(json.dumps({"seconds": seconds, "ranks": ranks}))


def launch(ranks: int, *job_args, launcher: str = "mpi") -> list[dict]:
    """Run this file as ``ranks`` ranks (or as one plain process) and read its JSON lines."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
    if ranks == 1 and launcher == "plain":
        argv = [sys.executable, HERE, *job_args]
    else:
        argv = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(ranks)]
        argv += ["--launcher", launcher, HERE, *job_args]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3000)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _bandwidth(row: dict) -> tuple[float, float]:
    algbw = row["bytes"] / row["seconds"] / 1e9
    n = row["ranks"]
    return algbw, algbw * 2 * (n - 1) / n


def report_all_reduce(ranks: int, max_mb: int) -> None:
    mpi = launch(ranks, "--job", "mpi", "--max-mb", str(max_mb))
    ours = launch(ranks, "--job", "ember", "--max-mb", str(max_mb))
    print(f"all_reduce float32, {ranks} ranks (busbw = algbw * 2(n-1)/n)")
    print(f"{'size':>10s} {'MPI us':>10s} {'ember us':>10s} {'MPI busbw':>10s} "
          f"{'ember busbw':>12s} {'ratio':>7s}")  # fmt: skip
    for theirs, mine in zip(mpi, ours):
        size = theirs["bytes"]
        label = f"{size // 1024} KB" if size < 1 << 20 else f"{size >> 20} MB"
        print(
            f"{label:>10s} {theirs['seconds'] * 1e6:10.1f} {mine['seconds'] * 1e6:10.1f} "
            f"{_bandwidth(theirs)[1]:8.2f} GB/s {_bandwidth(mine)[1]:8.2f} GB/s "
            f"{mine['seconds'] / theirs['seconds']:6.2f}x"
        )


def report_ddp(steps: int) -> None:
    alone = launch(1, "--job", "ddp", "--steps", str(steps), launcher="plain")[0]
    ddp = launch(2, "--job", "ddp", "--steps", str(steps))[0]
    print("DDP on the anchors' MLP (784-512-512-10, Adam), 64 rows per rank, 1 thread per rank")
    print(f"  one process, 64 rows: {alone['seconds'] * 1e3:8.2f} ms/step")
    print(f"  DDP, 2 ranks x 64:    {ddp['seconds'] * 1e3:8.2f} ms/step")
    print(f"  overhead ratio:       {ddp['seconds'] / alone['seconds']:8.2f}x")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--max-mb", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--nccl", action="store_true", help="the sweep on one GPU over NCCL")
    parser.add_argument("--skip", nargs="*", default=[], choices=["all_reduce", "ddp"])
    parser.add_argument(
        "--job", choices=["mpi", "ember", "ember-cuda", "ddp"], help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.job == "mpi":
        return job_mpi(args.max_mb)
    if args.job in ("ember", "ember-cuda"):
        return job_ember(args.max_mb, "cuda" if args.job == "ember-cuda" else "cpu")
    if args.job == "ddp":
        return job_ddp(args.steps)
    if args.nccl:
        rows = launch(1, "--job", "ember-cuda", "--max-mb", str(args.max_mb), launcher="direct")
        for row in rows:
            print(f"NCCL all_reduce, 1 GPU: {row['bytes']:>11d} B {row['seconds'] * 1e6:10.1f} us")
        return None
    if "all_reduce" not in args.skip:
        report_all_reduce(args.ranks, args.max_mb)
    if "ddp" not in args.skip:
        report_ddp(args.steps)
    return None


if __name__ == "__main__":
    main()
