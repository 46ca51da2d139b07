"""The direct launcher: this node's ranks as child processes, watched until they all finish.

When one rank fails, the others are terminated (SIGTERM, then SIGKILL after a grace period)
and the whole group is restarted while ``max_restarts`` allows, as torchrun's agent does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from ._failure import Failure

GRACE_SECONDS = 5.0


class WorkerGroup:
    """This node's ranks.

    Args:
        command: the rank's argv after ``python`` (the rank entry point and the script).
        env: the environment every rank shares (``WORLD_SIZE``, ``MASTER_ADDR``...).
        nproc: ranks on this node; ``rank_offset`` is the global rank of local rank 0.
        error_dir: where ranks write their tracebacks.
        log_dir: when set with ``redirects``, a rank's output goes to files there.
    """

    def __init__(self, command, env, nproc, rank_offset, error_dir, log_dir=None, redirects=0):
        self.command, self.env, self.nproc = command, env, nproc
        self.rank_offset, self.error_dir = rank_offset, error_dir
        self.log_dir, self.redirects = log_dir, redirects
        self.procs: list[subprocess.Popen] = []

    def start(self, attempt: int) -> None:
        self.procs = []
        for local_rank in range(self.nproc):
            env = dict(self.env)
            env.update(
                RANK=str(self.rank_offset + local_rank),
                LOCAL_RANK=str(local_rank),
                TORCHELASTIC_RESTART_COUNT=str(attempt),
                EMBER_ERROR_DIR=self.error_dir,
            )
            out, err = self._outputs(attempt, local_rank)
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-u", *self.command],
                    env=env,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            )

    def _outputs(self, attempt: int, local_rank: int):
        if not self.log_dir or not self.redirects:
            return None, None
        folder = os.path.join(self.log_dir, f"attempt_{attempt}", str(local_rank))
        os.makedirs(folder, exist_ok=True)
        # The child keeps its own copy of the descriptor; the parent's closes with the object.
        out = open(os.path.join(folder, "stdout.log"), "w") if self.redirects & 1 else None  # noqa: SIM115
        err = open(os.path.join(folder, "stderr.log"), "w") if self.redirects & 2 else None  # noqa: SIM115
        return out, err

    def monitor(self, interval: float) -> list[Failure]:
        """Wait until every rank exited 0 (returns []) or one failed (returns the failures,
        first one first, after stopping the others)."""
        while True:
            codes = [p.poll() for p in self.procs]
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                first = min(failed, key=lambda i: self._order(i))
                failures = [self._failure(first)]
                self.stop()
                codes = [p.poll() for p in self.procs]
                failures += [
                    self._failure(i)
                    for i, c in enumerate(codes)
                    if i != first and c not in (None, 0, -signal.SIGTERM, -signal.SIGKILL)
                ]
                return failures
            if all(c == 0 for c in codes):
                return []
            time.sleep(interval)

    def _order(self, index: int) -> float:
        """When rank ``index`` failed, by its error file's time (else now)."""
        path = self._error_file(index)
        return os.path.getmtime(path) if os.path.exists(path) else time.time()

    def _error_file(self, index: int) -> str:
        return os.path.join(self.error_dir, f"rank{self.rank_offset + index}.json")

    def _failure(self, index: int) -> Failure:
        proc = self.procs[index]
        path = self._error_file(index)
        rank = self.rank_offset + index
        return Failure(
            rank, index, proc.returncode, proc.pid, path if os.path.exists(path) else None
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Signal every live rank's process group, then kill what is left after the grace."""
        for proc in self.procs:
            if proc.poll() is None:
                _signal_group(proc, sig)
        deadline = time.monotonic() + GRACE_SECONDS
        for proc in self.procs:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
        os.killpg(proc.pid, sig)
