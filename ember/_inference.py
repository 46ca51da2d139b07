"""Inference tensors: what ``Tensor.is_inference()`` reads.

PyTorch marks every tensor allocated inside ``inference_mode()``, and its views, as an
inference tensor. ember marks the storage instead (``_storage.InferenceStorage``): views share
their base's storage, so a view of an inference tensor is one too and a view of an ordinary
tensor taken inside the block is not, as in PyTorch.

The mode is thread-local, but reading a thread-local on every allocation would cost each op
call about a hundred nanoseconds. ``OPEN.blocks`` counts the ``inference_mode(True)`` blocks
open in any thread, and the thread-local is read only while some is: ``new_storage()`` reads the
count, and ``ember._tensor.empty`` (every op's output) reads nothing at all. While a block is
open, every device's allocation route sends all allocations through ``new_storage()``
(``dispatcher/memory.py`` ``allocation_route``); the first block to open and the last to close
unset the routes, and the routes are set under the same lock as the count, so a route built
before a block opened is never used after.
"""

from __future__ import annotations

import threading


class _Open:
    __slots__ = ("blocks",)

    def __init__(self):
        self.blocks = 0


OPEN = _Open()
# += from two threads at once may lose a count; dispatcher/memory.py sets and unsets the routes
# under it too (reentrant: opened() unsets them while holding it).
LOCK = threading.RLock()
_thread = None  # autograd's thread-local modes, bound on first use (autograd imports ember)


def opened() -> None:
    with LOCK:
        OPEN.blocks += 1
        if OPEN.blocks == 1:
            _forget_routes()


def closed() -> None:
    with LOCK:
        OPEN.blocks -= 1
        if OPEN.blocks == 0:
            _forget_routes()


def _forget_routes() -> None:
    from .dispatcher.memory import forget_routes  # the dispatcher imports this module

    forget_routes()


def enabled() -> bool:
    """Whether this thread is inside ``inference_mode(True)`` (call when ``OPEN.blocks``)."""
    global _thread
    if _thread is None:
        from .autograd.grad_mode import THREAD

        _thread = THREAD
    return _thread.mode.inference
