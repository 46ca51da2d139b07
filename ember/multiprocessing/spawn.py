"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, as PyTorch's.

When a process fails, the others are stopped (SIGTERM, then SIGKILL) and the parent raises:
``ProcessRaisedException`` carrying the child's formatted traceback when it raised,
``ProcessExitedException`` when it exited with a non-zero code or died of a signal. Each child
writes its traceback to a file of its own: a one-shot message that cannot block on a full pipe,
read only by the parent after the child is gone.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings

log = logging.getLogger(__name__)

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
]

_PR_SET_PDEATHSIG = 1


class ProcessException(Exception):  # noqa: N818 - PyTorch's name
    """A process of a ``spawn`` failed: ``error_index`` is its index, ``pid`` its process id."""

    __slots__ = ("error_index", "error_pid")

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process raised; the message holds its traceback."""

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code, or was killed by ``signal_name``."""

    __slots__ = ("exit_code",)

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        args = (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)
        return type(self), args


def _die_with_parent() -> None:
    """Linux: SIGINT when the parent dies, so that non-daemonic children do not outlive it."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _wrap(fn, i, args, error_file):
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent stopped us
    except Exception:
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes of a ``start_processes(..., join=False)``; ``join`` them until it is true."""

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(process.pid) for process in self.processes]

    def _join_all(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait for the processes; True once all have exited successfully.

        If one exited with a non-zero status, the others are terminated (after ``grace_period``
        seconds, if given; SIGKILL if SIGTERM does not end them) and the first failure is
        raised: ``ProcessRaisedException`` with its traceback, or ``ProcessExitedException``.

        Args:
            timeout: seconds to wait for any process to exit (None: until one does).
            grace_period: seconds the others get to exit by themselves after a failure.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_others(grace_period)
        raise self._failure(failed)

    def _stop_others(self, grace_period: float | None) -> None:
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Terminating process %s via signal SIGTERM", process.pid)
                process.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                log.warning("Unable to shutdown process %s via SIGTERM, killing it", process.pid)
                process.kill()
            process.join()

    def _failure(self, index: int) -> ProcessException:
        process = self.processes[index]
        if not os.access(self.error_files[index], os.R_OK):  # it did not raise: it exited
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(
                    f"process {index:d} terminated with signal {name}",
                    error_index=index,
                    error_pid=process.pid,
                    exit_code=code,
                    signal_name=name,
                )
            return ProcessExitedException(
                f"process {index:d} terminated with exit code {code:d}",
                error_index=index,
                error_pid=process.pid,
                exit_code=code,
            )
        with open(self.error_files[index], "rb") as fh:
            trace = pickle.load(fh)
        os.unlink(self.error_files[index])
        msg = f"\n\n-- Process {index:d} terminated with the following error:\n{trace}"
        return ProcessRaisedException(msg, index, process.pid)


class SpawnContext(ProcessContext):
    def __init__(self, processes, error_files):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(processes, error_files)


def _error_file() -> str:
    """A fresh path for a child's traceback; the file exists only if the child raised."""
    fd, path = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".pickle")
    os.close(fd)
    os.unlink(path)
    return path


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``spawn`` with any start method (``"spawn"``, ``"fork"``, ``"forkserver"``).

    Returns:
        None if ``join`` is True, else the ``ProcessContext`` to join.
    """
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        error_file = _error_file()
        process = context.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(error_file)
    running = ProcessContext(processes, error_files)
    if not join:
        return running
    while not running.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawn ``nprocs`` processes that run ``fn(i, *args)``, ``i`` being the process index.

    If one of them exits with a non-zero status, the others are killed and an exception says
    why; when it raised, its traceback is part of the exception raised here.

    Args:
        fn: the entry point; defined at the top level of a module, so it can be pickled.
        args: the arguments after the index (tensors among them are shared, not copied).
        nprocs: how many processes.
        join: wait for them all (else return the ``ProcessContext``).
        daemon: the processes' daemon flag.
        start_method: deprecated; always ``"spawn"`` (use ``start_processes`` for others).

    Returns:
        None if ``join`` is True, else a ``ProcessContext``.

    Example:
        >>> def train(rank, model):
        ...     ...
        >>> ember.multiprocessing.spawn(train, args=(model,), nprocs=2)
    """
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " ember.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
