"""Top-level runtime switches and build flags (ember/_runtime_flags.py) against PyTorch; every
test puts back the state it changed."""

import pytest
import torch

import ember

from .same_error import assert_same_error as _errors


@pytest.fixture
def restore_determinism():
    saved = (ember.are_deterministic_algorithms_enabled(),
             ember.is_deterministic_algorithms_warn_only_enabled())  # fmt: skip
    saved_torch = torch.get_deterministic_debug_mode()
    yield
    ember.use_deterministic_algorithms(saved[0], warn_only=saved[1])
    torch.set_deterministic_debug_mode(saved_torch)


def test_warn_always_round_trip():
    saved = ember.is_warn_always_enabled()
    try:
        assert saved is torch.is_warn_always_enabled() is False
        ember.set_warn_always(True)
        assert ember.is_warn_always_enabled() is True
        ember.set_warn_always(False)
        assert ember.is_warn_always_enabled() is False
        _errors(lambda: ember.set_warn_always(1), lambda: torch.set_warn_always(1))
    finally:
        ember.set_warn_always(saved)


@pytest.mark.parametrize("mode", [0, 1, 2, "default", "warn", "error"])
def test_deterministic_debug_mode_follows_use_deterministic_algorithms(mode, restore_determinism):
    ember.set_deterministic_debug_mode(mode)
    torch.set_deterministic_debug_mode(mode)
    assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
    assert ember.are_deterministic_algorithms_enabled() == (
        torch.are_deterministic_algorithms_enabled()
    )
    assert ember.is_deterministic_algorithms_warn_only_enabled() == (
        torch.is_deterministic_algorithms_warn_only_enabled()
    )
    ember.use_deterministic_algorithms(True, warn_only=True)
    assert ember.get_deterministic_debug_mode() == 1


@pytest.mark.parametrize("bad", [3, -1, "loud", 1.5, None])
def test_deterministic_debug_mode_errors(bad, restore_determinism):
    _errors(
        lambda: ember.set_deterministic_debug_mode(bad),
        lambda: torch.set_deterministic_debug_mode(bad),
    )


def test_flush_denormal_answers_unsupported_and_checks_type():
    # ember cannot set FTZ/DAZ for its kernels: False, as torch on a CPU without the feature
    assert ember.set_flush_denormal(True) is False
    assert ember.set_flush_denormal(False) is False
    for bad in (1, "x"):
        _errors(
            lambda b=bad: ember.set_flush_denormal(b), lambda b=bad: torch.set_flush_denormal(b)
        )


def test_init_num_threads_keeps_the_count():
    before = ember.get_num_threads()
    assert ember.init_num_threads() is None
    assert ember.get_num_threads() == before


@pytest.mark.parametrize("name", ["has_lapack", "has_spectral", "has_mkl", "has_openmp"])
def test_build_flags_are_bools(name):
    assert isinstance(getattr(torch, name), bool)
    assert isinstance(getattr(ember, name), bool)


def test_build_flags_follow_backends():
    assert ember.has_mkl == ember.backends.mkl.is_available()
    assert ember.has_openmp == ember.backends.openmp.is_available()
    assert ember.has_lapack and ember.has_spectral


def _nan_backward(lib):
    x = lib.zeros(1, requires_grad=True)
    (x / x).sum().backward()  # 0/0: NaN gradients


def test_anomaly_enabled_with_and_without_nan_check():
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
    try:
        ember.set_anomaly_enabled(True)
        assert ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
        with pytest.raises(RuntimeError, match="returned nan values"):
            _nan_backward(ember)
        ember.set_anomaly_enabled(True, check_nan=False)
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
        _nan_backward(ember)  # anomaly mode on, NaN check off: no error, as torch
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()
    try:
        torch.set_anomaly_enabled(True, check_nan=False)
        _nan_backward(torch)
    finally:
        torch.set_anomaly_enabled(False)


def test_detect_anomaly_check_nan_false_and_restores():
    with ember.autograd.detect_anomaly(check_nan=False):
        assert not ember.is_anomaly_check_nan_enabled()
        _nan_backward(ember)
    assert ember.is_anomaly_check_nan_enabled() and not ember.is_anomaly_enabled()
    with ember.autograd.set_detect_anomaly(True, check_nan=False):
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
    assert ember.is_anomaly_check_nan_enabled() and not ember.is_anomaly_enabled()


def test_set_anomaly_enabled_type_errors():
    _errors(lambda: ember.set_anomaly_enabled(1), lambda: torch.set_anomaly_enabled(1))
    _errors(lambda: ember.set_anomaly_enabled(True, 1), lambda: torch.set_anomaly_enabled(True, 1))


def test_grad_scaler_at_top_level():
    assert ember.GradScaler is ember.amp.GradScaler
    assert torch.GradScaler is torch.amp.GradScaler
