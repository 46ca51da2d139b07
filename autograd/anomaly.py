"""Anomaly detection: record where each node came from, and fail on NaN gradients naming it."""

from __future__ import annotations

from . import grad_mode


class detect_anomaly:  # noqa: N801 - PyTorch's name
    """Inside the block, nodes remember their forward call and a backward producing NaN raises,
    naming the forward op (``Function 'LogBackward0' returned nan values...``)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._saved = grad_mode.STATE.anomaly
        grad_mode.STATE.anomaly = True
        return self

    def __exit__(self, *exc):
        grad_mode.STATE.anomaly = self._saved
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
        self._saved = grad_mode.STATE.anomaly
        grad_mode.STATE.anomaly = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        grad_mode.STATE.anomaly = self._saved
        return False


def is_anomaly_enabled() -> bool:
    return grad_mode.STATE.anomaly
