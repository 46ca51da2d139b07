"""``ember.futures``: PyTorch's ``torch.futures`` (``Future``, ``collect_all``, ``wait_all``).

A Future holds a value or an exception set once; ``wait()`` blocks until then, callbacks
(``then``, ``add_done_callback``) run when it completes, in the completing thread, or at once
when it already has. ``ember.jit.fork`` returns one: outside TorchScript it runs its function
at once, as PyTorch's eager ``torch.jit.fork`` does, so its Future is already complete.
"""

from __future__ import annotations

import threading

__all__ = ["Future", "collect_all", "wait_all"]

_AGAIN = (
    "Attempting to mark a completed Future as complete again. Note that a Future can only be "
    "marked completed once."
)


class Future:
    """A value (or an exception) that becomes available once: ``torch.futures.Future``."""

    def __init__(self, *, devices=None) -> None:
        self._ready = threading.Condition()
        self._done = False
        self._value = None
        self._error: BaseException | None = None
        self._callbacks: list = []

    def __repr__(self) -> str:
        return f"<ember.futures.Future object at {id(self):#x}>"

    def done(self) -> bool:
        return self._done

    def wait(self):
        """The value, once set (blocking until then); the exception set instead is raised."""
        with self._ready:
            self._ready.wait_for(lambda: self._done)
        return self.value()

    def value(self):
        """The value of a completed Future (the exception set instead is raised)."""
        if not self._done:
            raise RuntimeError("Future.value() was called before the Future completed")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback) -> Future:
        """A Future of ``callback(self)``, run once this one completes (its exception, if it
        raises, completes the new Future)."""
        chained = Future()

        def run(done: Future) -> None:
            try:
                chained.set_result(callback(done))
            except Exception as error:  # the chained Future carries it, in PyTorch's words
                wrapped = RuntimeError(
                    "Got the following error when running the callback: "
                    f"{type(error).__name__}: {error}"
                )
                wrapped.__cause__ = error
                chained.set_exception(wrapped)

        self.add_done_callback(run)
        return chained

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` when this Future completes (now, if it has)."""
        with self._ready:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def set_result(self, result) -> None:
        self._complete(result, None)

    def set_exception(self, result) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, value, error) -> None:
        with self._ready:
            if self._done:
                raise RuntimeError(_AGAIN)
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._ready.notify_all()
        for callback in callbacks:
            callback(self)


def collect_all(futures) -> Future:
    """A Future that completes with the list ``futures`` once each of them has completed."""
    futures = list(futures)
    combined = Future()
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_done: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            combined.set_result(futures)

    if not futures:
        combined.set_result(futures)
    for future in futures:
        future.add_done_callback(one_done)
    return combined


def wait_all(futures) -> list:
    """The values of ``futures`` once all have completed (the first exception is raised)."""
    return [future.wait() for future in collect_all(futures).wait()]
