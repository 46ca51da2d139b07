"""Grad mode: whether ops record graph nodes. Thread-local, like PyTorch's.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` work as context managers
and as decorators. The modes are one plain object per thread (``Mode``, ``THREAD.mode``): a
recorded call fetches it once from the thread-local and then reads and writes its slots, which
cost a fifth of a ``threading.local`` attribute each (docs/eager_overhead.md, round 7).
"""

from __future__ import annotations

import functools
import inspect
import threading

from ember import _inference


class Mode:
    """One thread's autograd modes."""

    __slots__ = ("anomaly", "anomaly_check_nan", "checkpoint_valid", "enabled", "inference")

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.anomaly = False
        self.anomaly_check_nan = True
        # False while the engine runs for autograd.grad or backward(inputs=...): the reentrant
        # checkpoint cannot work there (PyTorch's _is_checkpoint_valid)
        self.checkpoint_valid = True


class _Thread(threading.local):
    def __init__(self):
        self.mode = Mode()  # each thread starts with its own: grad mode on


THREAD = _Thread()

# The recorders' read of the thread's Mode (autograd/recorder.py): a plain threading.local, which
# CPython reads through the thread's dict directly, where a subclass such as _Thread takes the
# generic attribute path (57 instructions less a recorded call, docs/eager_overhead.md,
# round 18). It holds the same object as THREAD.mode, which a thread keeps for its whole life,
# from the thread's first recorded call (mirror_mode).
MIRROR = threading.local()


def mirror_mode() -> Mode:
    """The thread's Mode, now mirrored in ``MIRROR`` (a recorder's first call in a thread)."""
    mode = MIRROR.mode = THREAD.mode
    return mode


def is_grad_enabled() -> bool:
    """Whether operations on tensors that require grad are recorded."""
    return THREAD.mode.enabled


def is_inference_mode_enabled() -> bool:
    return THREAD.mode.inference


class _Mode:
    """Base of the grad-mode context managers; also usable as a decorator."""

    def __enter__(self):
        mode = THREAD.mode
        self._saved = (mode.enabled, mode.inference)
        self._apply()
        return self

    def __exit__(self, *exc):
        mode = THREAD.mode
        mode.enabled, mode.inference = self._saved
        return False

    def _apply(self):
        raise NotImplementedError

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn):
        """The mode holds while the generator runs, not while its caller does: each resumption
        (next, send, throw, close) runs inside a fresh copy of this mode."""

        @functools.wraps(fn)
        def generator(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:  # thrown in by the caller: pass it on
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return generator

    def clone(self):
        return type(self)()


class no_grad(_Mode):  # noqa: N801 - PyTorch's name
    """Disable gradient recording inside the block (or the decorated function)."""

    def _apply(self):
        THREAD.mode.enabled = False


class enable_grad(_Mode):  # noqa: N801
    """Enable gradient recording inside the block, even within ``no_grad``."""

    def _apply(self):
        THREAD.mode.enabled = True


class set_grad_enabled(_Mode):  # noqa: N801
    """Set grad mode to ``mode`` now; restores the previous mode on exit when used with ``with``.

    As a decorator it leaves the current mode alone and sets ``mode`` around each call.
    """

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = THREAD.mode.enabled
        THREAD.mode.enabled = self.mode

    def __enter__(self):
        self._saved = (self._prev, THREAD.mode.inference)  # the mode from before construction
        return self

    def __call__(self, fn):
        THREAD.mode.enabled = self._prev  # construction switched the mode; decorating must not
        return super().__call__(fn)

    def clone(self):
        return _GradEnabled(self.mode)


class _GradEnabled(_Mode):
    """set_grad_enabled's form for each call of a decorated function (switches on enter)."""

    def __init__(self, mode: bool):
        self.mode = mode

    def _apply(self):
        THREAD.mode.enabled = self.mode

    def clone(self):
        return _GradEnabled(self.mode)


class inference_mode(_Mode):  # noqa: N801
    """Like ``no_grad``, and marks the mode for code that checks ``is_inference_mode_enabled``."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _apply(self):
        # As PyTorch's InferenceMode guard: grad mode is the opposite of inference mode, so
        # inference_mode(False) turns recording back on, even inside no_grad.
        mode = THREAD.mode
        mode.enabled = not self.mode
        mode.inference = self.mode

    def __enter__(self):
        super().__enter__()
        if self.mode:  # tensors allocated from now on are inference tensors (ember/_inference.py)
            _inference.opened()
        return self

    def __exit__(self, *exc):
        if self.mode:
            _inference.closed()
        return super().__exit__(*exc)

    def clone(self):
        return inference_mode(self.mode)
