"""Run one library per process: the benchmarks' common harness.

In one process, ember's, PyTorch's and numpy's thread pools compete for the same cores and the
figures lie, so every benchmark runs its measuring code once per library, each time in a fresh
interpreter started with ``--worker LIBRARY``, and prints the JSON of its figures as the last
line. ``in_own_process`` starts such a worker with the thread count pinned in every pool's
environment variable and returns what it printed; ``best`` times a call the way they all do.

    results = {lib: in_own_process(__file__, lib, ["--repeat", "5"], threads=1) for lib in LIBS}
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "EMBER_NUM_THREADS",
)


def worker_environment(threads: int) -> dict:
    """This process's environment with the checkout's ember first on the path (benchmarks/ is
    not a package; the same ember as when run from the repo root) and every pool pinned."""
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    env.update(dict.fromkeys(THREAD_VARIABLES, str(threads)))
    return env


def in_own_process(script: str, library: str, options: list[str], threads: int) -> dict:
    """Run ``script --worker library --threads N *options`` and return its last line's JSON."""
    command = [sys.executable, os.path.abspath(script), "--worker", library]
    command += ["--threads", str(threads), *options]
    done = subprocess.run(command, capture_output=True, text=True, env=worker_environment(threads))
    if done.returncode:
        raise RuntimeError(
            f"the {library} worker of {os.path.basename(script)} failed:\n{done.stderr}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_library(name: str, threads: int):
    """``ember``, ``torch`` or ``numpy``, with its pool sized to ``threads`` where it has one."""
    if name == "numpy":
        import numpy

        return numpy
    if name == "torch":
        import torch

        torch.set_num_threads(threads)
        return torch
    import ember

    ember.set_num_threads(threads)
    return ember


def rounds(fn, number: int, repeat: int, clock=time.perf_counter) -> list[float]:
    """Seconds per call of ``fn`` in each of ``repeat`` rounds of ``number`` calls, after one
    warm-up call. ``clock``: wall time by default; ``time.thread_time`` counts only this
    thread's CPU time, which other processes on a busy machine barely change (meaningful where
    every library computes on the calling thread: one thread)."""
    fn()
    times = []
    for _ in range(repeat):
        start = clock()
        for _ in range(number):
            fn()
        times.append((clock() - start) / number)
    return times


def best(fn, number: int, repeat: int, clock=time.perf_counter) -> float:
    """The best round of ``rounds`` (the minimum is the least disturbed by other load on a
    shared machine)."""
    return min(rounds(fn, number, repeat, clock))


def median(fn, number: int, repeat: int, clock=time.perf_counter) -> float:
    """The median round of ``rounds`` (steadier than the minimum where the load comes and goes
    during a run, as on the shared 2-core machine)."""
    return statistics.median(rounds(fn, number, repeat, clock))


def ratio(ours: float | None, reference: float | None) -> str:
    """``ours / reference`` as ``1.23x``, or ``n/a`` where either is missing."""
    if ours is None or reference is None or reference != reference or reference == 0:
        return "n/a"
    return f"{ours / reference:.2f}x"
