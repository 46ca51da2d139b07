"""Inference tensors: what ``Tensor.is_inference()`` reads.

PyTorch marks every tensor allocated inside ``inference_mode()``, and its views, as an
inference tensor. ember marks the storage instead (``_storage.InferenceStorage``): views share
their base's storage, so a view of an inference tensor is one too and a view of an ordinary
tensor taken inside the block is not, as in PyTorch.

The mode is thread-local, but reading a thread-local on every allocation would cost each op
call about a hundred nanoseconds. ``OPEN.blocks`` counts the ``inference_mode(True)`` blocks
open in any thread: one global slot read, nothing more, while none is, and the thread-local
is read only while some is.
"""

from __future__ import annotations

import threading


class _Open:
    __slots__ = ("blocks",)

    def __init__(self):
        self.blocks = 0


OPEN = _Open()
_lock = threading.Lock()  # += from two threads at once may lose a count
_thread = None  # autograd's thread-local modes, bound on first use (autograd imports ember)


def opened() -> None:
    with _lock:
        OPEN.blocks += 1


def closed() -> None:
    with _lock:
        OPEN.blocks -= 1


def enabled() -> bool:
    """Whether this thread is inside ``inference_mode(True)`` (call when ``OPEN.blocks``)."""
    global _thread
    if _thread is None:
        from .autograd.grad_mode import THREAD

        _thread = THREAD
    return _thread.mode.inference
