"""``ember.jit.fork`` and ``ember.jit.wait``: outside TorchScript, PyTorch's ``fork`` runs its
function at once and returns a completed Future (an exception raises at the fork); ember's do
the same, in eager code and in traced or scripted functions alike."""

from __future__ import annotations

from ember.futures import Future


def fork(func, *args, **kwargs) -> Future:
    """Run ``func(*args, **kwargs)``; its result as a completed ``ember.futures.Future``."""
    future = Future()
    future.set_result(func(*args, **kwargs))
    return future


def wait(future: Future):
    """The value of a Future returned by ``fork``."""
    return future.wait()
