"""Running real multi-process jobs from the tests: ``emberrun`` on this machine, loopback only,
each job bounded by a timeout after which its whole process group is killed."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOBS = Path(__file__).resolve().parent / "jobs"


def mpi_or_skip() -> None:
    """Skip (with the reason) where MPI is not installed; CI installs ember[distributed]."""
    from ember.distributed import _mpirun

    if importlib.util.find_spec("mpi4py") is None or _mpirun.find_launcher() is None:
        pytest.skip("MPI is not installed: pip install 'ember[distributed]'")


def job_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
    # Loopback only, and over TCP: Open MPI's shared-memory transport would put segments in
    # /dev/shm, which the shared-memory leak tests of ember.multiprocessing watch.
    env.update(OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include="lo")
    env.update(OMPI_MCA_oob_tcp_if_include="lo")
    env.update(extra or {})
    return env


def run_job(
    script: str, nproc: int, *args, launcher: str = "mpi", timeout: float = 120, env=None,
    launcher_args=(),
) -> tuple[subprocess.CompletedProcess, float]:  # fmt: skip
    """``emberrun --nproc-per-node nproc jobs/script args``: (completed process, seconds)."""
    argv = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc)]
    argv += ["--launcher", launcher, *launcher_args, str(JOBS / script), *map(str, args)]
    start = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=job_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"job {script} hung past {timeout}s:\n{out}\n{err}") from None
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    return done, time.monotonic() - start
