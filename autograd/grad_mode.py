"""Grad mode: whether ops record graph nodes. Thread-local, like PyTorch's.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` work as context managers
and as decorators. The autograd layer reads ``STATE.enabled`` on every call, so it is a plain
attribute of a thread-local object.
"""

from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference = False
        self.anomaly = False
        self.anomaly_check_nan = True


STATE = _State()


def is_grad_enabled() -> bool:
    """Whether operations on tensors that require grad are recorded."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _Mode:
    """Base of the grad-mode context managers; also usable as a decorator."""

    def __enter__(self):
        self._saved = (STATE.enabled, STATE.inference)
        self._apply()
        return self

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._saved
        return False

    def _apply(self):
        raise NotImplementedError

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    with self.clone():
                        response = gen.send(request)

            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()


class no_grad(_Mode):  # noqa: N801 - PyTorch's name
    """Disable gradient recording inside the block (or the decorated function)."""

    def _apply(self):
        STATE.enabled = False


class enable_grad(_Mode):  # noqa: N801
    """Enable gradient recording inside the block, even within ``no_grad``."""

    def _apply(self):
        STATE.enabled = True


class set_grad_enabled(_Mode):  # noqa: N801
    """Set grad mode to ``mode`` now; restores the previous mode on exit when used with ``with``."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._saved = (STATE.enabled, STATE.inference)
        STATE.enabled = self.mode

    def _apply(self):
        STATE.enabled = self.mode

    def clone(self):
        return set_grad_enabled.__new__(set_grad_enabled)._init_only(self.mode)

    def _init_only(self, mode):
        self.mode = mode
        return self


class inference_mode(_Mode):  # noqa: N801
    """Like ``no_grad``, and marks the mode for code that checks ``is_inference_mode_enabled``."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _apply(self):
        if self.mode:
            STATE.enabled = False
            STATE.inference = True

    def clone(self):
        return inference_mode(self.mode)
