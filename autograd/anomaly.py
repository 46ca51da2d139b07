"""Anomaly detection: record where each node came from, and fail on NaN gradients naming it."""

from __future__ import annotations

import os
import traceback

from . import grad_mode

# Frames of the dispatch machinery say nothing about the user's code: traces leave them out.
_HERE = os.path.dirname(os.path.abspath(__file__))
_INTERNAL_DIRS = (
    os.path.join(_HERE, ""),
    os.path.join(os.path.dirname(_HERE), "dispatcher", ""),  # ember.dispatcher, a sibling
)
_INTERNAL_FILES = ("_tensor.py", "_bind.py", "_frontends.py", "_indexing.py")  # in ember/


def _internal(filename: str) -> bool:
    if filename == "<string>":  # the generated ember.* functions and Tensor methods
        return True
    if filename.startswith(_INTERNAL_DIRS):
        return True
    import ember

    return os.path.dirname(filename) == os.path.dirname(ember.__file__) and (
        os.path.basename(filename) in _INTERNAL_FILES
    )


def record_trace(node) -> None:
    """In anomaly mode, keep the user's stack of the forward call that made ``node``."""
    if grad_mode.THREAD.mode.anomaly:
        frames = [f for f in traceback.extract_stack()[:-1] if not _internal(f.filename)]
        node.trace = "".join(traceback.format_list(frames))


def _origin(node) -> str:
    op = node.op.name if getattr(node, "op", None) is not None else node.name()
    trace = node.trace or "(run with ember.autograd.detect_anomaly() to see the forward call)\n"
    return f"The forward call of '{op}' that created it:\n{trace}"


def check_nan(node, outputs) -> None:
    """Raise, naming the node and its forward call, if its backward produced NaN."""
    for i, g in enumerate(outputs):
        if g is not None and bool(g.isnan().any()):
            raise RuntimeError(
                f"Function '{node.name()}' returned nan values in its {i}th output.\n"
                + _origin(node)
            )


def note_origin(exc: BaseException, node) -> None:
    """An error in a node's backward gets the forward call that made the node as a note."""
    exc.add_note(f"Error detected in {node.name()}. " + _origin(node))


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Inside the block, nodes remember their forward call and a backward producing NaN raises,
    naming the forward op (``Function 'LogBackward0' returned nan values...``)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._saved = _switch(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _switch(*self._saved)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:  # noqa: N801
    def __init__(self, mode: bool, check_nan: bool = True):
        self._saved = _switch(bool(mode), check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _switch(*self._saved)
        return False


def _switch(enabled: bool, check_nan: bool) -> tuple:
    """Set anomaly mode and its NaN check; the previous pair, to restore."""
    mode = grad_mode.THREAD.mode
    saved = (mode.anomaly, mode.anomaly_check_nan)
    mode.anomaly, mode.anomaly_check_nan = enabled, check_nan
    return saved


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """``torch.set_anomaly_enabled``: switch anomaly mode for this thread, with or without
    the check that fails a backward producing NaN."""
    for position, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan))):
        if not isinstance(value, bool):
            raise TypeError(
                f"set_anomaly_enabled(): argument '{name}' (position {position + 1}) must be "
                f"bool, not {type(value).__name__}"
            )
    _switch(enabled, check_nan)


def is_anomaly_check_nan_enabled() -> bool:
    return grad_mode.THREAD.mode.anomaly_check_nan


def is_anomaly_enabled() -> bool:
    return grad_mode.THREAD.mode.anomaly
