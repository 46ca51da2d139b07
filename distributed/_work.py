"""``Work``: the handle of a collective in flight (``async_op=True`` returns it)."""

from __future__ import annotations

import time

from ._errors import DistBackendError


class Work:
    """A collective in flight: ``wait()`` until it is done (or the group's timeout), then the
    results are in the tensors.

    Args:
        group: the ProcessGroup it runs in.
        op: its name (``"all_reduce"``), for messages.
        requests: the backend's requests (hookspecs.py).
        finish: called once when all are done (copies staged results into the tensors).
        result: the tensors ``result()`` returns.
    """

    __slots__ = ("_done", "_error", "_finish", "_group", "_op", "_requests", "_result", "_seq")

    def __init__(self, group, op: str, requests: list, finish=None, result=()):
        self._group, self._op, self._requests = group, op, requests
        self._finish, self._result = finish, list(result)
        self._done, self._error = False, None
        self._seq = group._next_sequence()

    def is_completed(self) -> bool:
        """Whether it has finished (polls the backend; never blocks)."""
        if not self._done and self._error is None:
            try:
                if all(r.test() for r in self._requests):
                    self._complete()
            except Exception as exc:
                self._raise(exc)
        return self._done

    def wait(self, timeout=None) -> bool:
        """Block until done; ``DistBackendError`` when the backend fails or the group's timeout
        (or ``timeout``, a timedelta) passes first."""
        if self._done:
            return True
        if self._error is not None:
            raise self._error
        seconds = self._group._timeout if timeout is None else timeout.total_seconds()
        start = time.monotonic()
        for request in self._requests:
            left = seconds - (time.monotonic() - start)
            try:
                finished = request.wait(max(left, 0.0))
            except Exception as exc:
                self._raise(exc)
            if not finished:
                self._timed_out(time.monotonic() - start)
        self._complete()
        return True

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._finish()

    def _raise(self, exc: Exception):
        error = DistBackendError(f"{self._describe()} failed: {exc}")
        self._error = error
        self._group._broken = error
        raise error from exc

    def _timed_out(self, elapsed: float):
        error = DistBackendError(
            f"[Rank {self._group._world_rank}] collective operation timeout: {self._describe()} "
            f"ran for {elapsed * 1000:.0f} milliseconds before timing out (a peer died, hangs, "
            "or runs a different collective)"
        )
        self._error = error
        self._group._broken = error
        raise error

    def _describe(self) -> str:
        group = self._group
        return (
            f"Work(SeqNum={self._seq}, OpType={self._op.upper()}, group={group.group_name}, "
            f"backend={group._backend_str}, Timeout(ms)={group._timeout * 1000:.0f})"
        )

    def is_success(self) -> bool:
        return self._done and self._error is None

    def exception(self):
        return self._error

    def result(self) -> list:
        """The output tensors (as PyTorch's Work.result())."""
        return self._result

    def source_rank(self) -> int:
        """The sender of a completed ``irecv`` (group rank)."""
        source = getattr(self._requests[0], "source", None)
        if not self._done or source is None:
            raise RuntimeError("source_rank() is only available on a completed recv")
        return source

    def __repr__(self) -> str:
        return f"<ember.distributed.Work {self._describe()} done={self._done}>"
