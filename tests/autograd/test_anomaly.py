"""detect_anomaly: a backward that produces NaN raises, naming the backward function, the
forward op and the user's line that called it; without it NaN gradients pass silently."""

from __future__ import annotations

import pytest

import ember
from ember.autograd import Function, detect_anomaly, is_anomaly_enabled, set_detect_anomaly


def _nan_backward(x):
    y = ember.log(x * 0)  # log(0) = -inf: its backward gives g / 0, and 0 * inf = nan
    return (y * 0).sum()


def test_nan_names_the_op_and_the_forward_line(device):
    x = ember.tensor([0.5, 1.0], device=device).requires_grad_()
    with detect_anomaly(), pytest.raises(RuntimeError) as info:
        _nan_backward(x).backward()
    message = str(info.value)
    assert message.startswith("Function 'LogBackward0' returned nan values in its 0th output.")
    assert "The forward call of 'log' that created it:" in message
    assert "test_anomaly.py" in message and "in _nan_backward" in message
    assert "dispatcher" not in message and "<string>" not in message  # user frames only


def test_without_anomaly_mode_nan_passes(device):
    x = ember.tensor([0.5, 1.0], device=device).requires_grad_()
    _nan_backward(x).backward()
    assert all(v != v for v in x.grad.tolist())  # NaN


class Broken(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("broken backward")


def test_errors_in_backward_get_the_forward_call(device):
    x = ember.ones(2, device=device).requires_grad_()
    with detect_anomaly(), pytest.raises(ValueError, match="broken backward") as info:
        Broken.apply(x).sum().backward()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "Error detected in BrokenBackward" in notes and "test_anomaly.py" in notes


def test_anomaly_switches():
    assert not is_anomaly_enabled()

    @detect_anomaly()
    def inside():
        return is_anomaly_enabled()

    assert inside() and not is_anomaly_enabled()
    with set_detect_anomaly(True):
        assert is_anomaly_enabled()
        with set_detect_anomaly(False):
            assert not is_anomaly_enabled()
        assert is_anomaly_enabled()
    assert not is_anomaly_enabled()
