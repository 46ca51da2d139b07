"""``ember.accelerator`` (torch.accelerator) and the top-level names around it: the tutorial
line ``current_accelerator().type if is_available() else "cpu"``, the functions that need an
accelerator raising PyTorch's error without one, and ``get_device_module``."""

import math
import warnings

import pytest
import torch

import ember
from ember import accelerator


@pytest.fixture
def on_ref(monkeypatch):
    """The example plugin's ``ref`` device as the only accelerator (always installed in tests,
    unlike PoCL or a GPU)."""
    monkeypatch.setattr(accelerator, "_device_types", lambda: ["ref"])
    assert accelerator.is_available()


@pytest.fixture
def none(monkeypatch):
    monkeypatch.setattr(accelerator, "_device_types", lambda: [])


def test_the_tutorial_line_picks_the_accelerator(on_ref):
    acc = ember.accelerator
    device = acc.current_accelerator().type if acc.is_available() else "cpu"
    assert device == "ref"
    assert acc.current_accelerator() == ember.device("ref")
    assert acc.current_accelerator().index is None  # as torch: the index is current_device_index's
    assert acc.device_count() >= 1 and acc.current_device_index() == 0
    x = ember.ones(3, device=acc.current_accelerator())
    assert x.device.type == "ref" and x.cpu().tolist() == [1.0, 1.0, 1.0]


def test_without_an_accelerator_it_answers_as_torchs_cpu_build(none):
    assert ember.accelerator.current_accelerator() is torch.accelerator.current_accelerator()
    assert ember.accelerator.is_available() is torch.accelerator.is_available() is False
    assert ember.accelerator.device_count() == torch.accelerator.device_count() == 0


NEEDS_ONE = ["current_device_index", "synchronize", "empty_cache", "memory_allocated",
             "memory_stats", "max_memory_reserved", "reset_peak_memory_stats"]  # fmt: skip


@pytest.mark.parametrize("name", NEEDS_ONE)
def test_functions_needing_one_raise_torchs_error(none, name):
    with pytest.raises(RuntimeError) as theirs:
        getattr(torch.accelerator, name)()
    with pytest.raises(RuntimeError) as ours:
        getattr(ember.accelerator, name)()
    assert str(ours.value) == str(theirs.value)


def test_an_installed_accelerator_without_devices_is_still_named(monkeypatch):
    monkeypatch.setattr(accelerator, "_device_types", lambda: ["cuda"])
    monkeypatch.setattr(ember.cuda, "is_available", lambda: False)
    assert ember.accelerator.current_accelerator() == ember.device("cuda")
    assert ember.accelerator.current_accelerator(check_available=True) is None
    assert not ember.accelerator.is_available()


def test_memory_figures_follow_allocations(on_ref):
    before = ember.accelerator.memory_allocated()
    x = ember.empty(1 << 20, device="ref")
    assert ember.accelerator.memory_allocated() >= before + (1 << 20) * 4 - 4096
    assert ember.accelerator.max_memory_allocated() >= ember.accelerator.memory_allocated()
    del x
    ember.accelerator.reset_peak_memory_stats()
    assert ember.accelerator.max_memory_allocated() == ember.accelerator.memory_allocated()


def test_device_arguments_are_checked(on_ref):
    assert ember.accelerator.memory_allocated("ref:0") == ember.accelerator.memory_allocated(0)
    with pytest.raises(ValueError, match="doesn't match the current accelerator ref"):
        ember.accelerator.memory_allocated("cpu")
    with ember.accelerator.device_index(0):
        assert ember.accelerator.current_device_index() == 0
    with ember.accelerator.device_index(None):  # no change, as torch
        pass
    ember.accelerator.set_device_index(-1)  # a no-op, as torch
    ember.accelerator.synchronize("ref")
    caps = ember.accelerator.get_device_capability()
    assert ember.float32 in caps["supported_dtypes"]


def test_deprecated_spellings_warn_as_torchs(on_ref):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ember.accelerator.current_device_idx() == 0
        ember.accelerator.set_device_idx(0)
    assert [w.category for w in caught] == [FutureWarning, FutureWarning]
    assert "current_device_index" in str(caught[0].message)


def test_same_names_as_torch_accelerator():
    missing = sorted(set(torch.accelerator.__all__) - set(dir(ember.accelerator)) - {"Graph"})
    assert missing == []


def test_get_device_module():
    assert ember.get_device_module("cuda") is ember.cuda
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    with pytest.raises(RuntimeError, match="Invalid value of device '3'"):
        ember.get_device_module(3)


def test_get_device_module_none_is_the_accelerators(none):
    assert torch.get_device_module() is torch.cpu
    assert ember.get_device_module() is ember.cpu


def test_constants_and_names_beside_them():
    for name in ("pi", "e", "inf"):
        assert getattr(ember, name) == getattr(torch, name)
    assert math.isnan(ember.nan) and ember.newaxis is torch.newaxis is None
    assert ember.ones(3)[ember.newaxis].shape == (1, 3)
    assert ember.OutOfMemoryError is ember.cuda.OutOfMemoryError
    assert issubclass(ember.OutOfMemoryError, RuntimeError)
    assert ember.library.define is not None  # torch.library after ``import torch`` alone
