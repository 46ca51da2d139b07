"""``ember.cuda`` / ``ember.xpu`` without their device behave as ``torch.cuda`` in a CPU build.

The unavailable device is simulated by building the module for a device type no plugin serves
(``ember.cuda`` itself is checked too when this machine has no CUDA device), and "no accelerator
at all" by making the list of accelerator types name only such a device.
"""

from __future__ import annotations

import pytest
import torch

import ember
from ember import _accelerator
from ember._accelerator import AcceleratorUnavailableError, DeviceModule


def _modules():
    found = [DeviceModule("nodevice")]  # like ember.xpu on a machine without OpenCL devices
    if not ember.cuda.is_available():
        found.append(ember.cuda)
    return found


@pytest.fixture(params=_modules(), ids=lambda m: m.__name__)
def mod(request):
    return request.param


ZERO_OR_EMPTY = [
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_stats",
]


@pytest.mark.parametrize("name", ZERO_OR_EMPTY)
def test_memory_figures_are_zero(mod, name):
    assert getattr(mod, name)() == getattr(torch.cuda, name)()  # 0, or {} for memory_stats
    assert getattr(mod, name)(0) == getattr(mod, name)()


@pytest.mark.parametrize("name", ["empty_cache", "reset_peak_memory_stats"])
def test_cache_and_peak_resets_are_no_ops(mod, name):
    assert getattr(mod, name)() is None


def test_availability(mod):
    assert mod.is_available() is False
    assert mod.device_count() == 0
    assert mod.is_initialized() is False
    assert mod.unavailable_reason()
    assert mod.is_bf16_supported() is False
    assert mod.get_arch_list() == []


@pytest.mark.parametrize(
    "name, args",
    [
        ("synchronize", ()),
        ("current_device", ()),
        ("get_device_name", ()),
        ("get_device_name", (0,)),
        ("get_device_properties", (0,)),
        ("get_device_capability", ()),
        ("mem_get_info", ()),
        ("current_stream", ()),
        ("default_stream", ()),
        ("init", ()),
    ],
)
def test_what_needs_the_device_raises_where_torch_raises(mod, name, args):
    with pytest.raises(AssertionError):  # torch: "Torch not compiled with CUDA enabled"
        getattr(torch.cuda, name)(*args)
    with pytest.raises(AcceleratorUnavailableError, match=mod.__name__) as info:
        getattr(mod, name)(*args)
    # catchable the torch way and the ember way
    assert isinstance(info.value, AssertionError) and isinstance(info.value, RuntimeError)


def test_set_device_raises(mod):
    """torch's CPU build fails here with an AttributeError of its own; ember says why."""
    with pytest.raises(AcceleratorUnavailableError, match=mod.__name__):
        mod.set_device(0)


def test_device_context_raises_on_entry(mod):
    with pytest.raises(RuntimeError), mod.device(0):
        pass


@pytest.mark.parametrize("name", ["Stream", "Event"])
def test_stream_and_event_are_classes_that_refuse_construction(mod, name):
    cls = getattr(mod, name)
    assert isinstance(cls, type) and isinstance(getattr(torch.cuda, name), type)
    assert getattr(mod, name) is cls  # the same class every time: isinstance checks work
    assert not isinstance(object(), cls)
    with pytest.raises(RuntimeError, match=f"{name} requires a"):
        cls()


NAMES = ["Stream", "Event", "OutOfMemoryError", "device", "stream", "is_available", "nothing"]


@pytest.mark.parametrize("name", NAMES)
def test_hasattr_never_raises(mod, name):
    assert hasattr(mod, name) is (name != "nothing")


def test_seeding_works_without_the_device(mod):
    mod.manual_seed(3)
    mod.manual_seed_all(4)
    assert mod.initial_seed() == 4
    assert isinstance(mod.seed(), int)


def test_stream_context_of_none_is_a_no_op(mod):
    with mod.stream(None):
        pass


# ---- pinned memory ---------------------------------------------------------------------------
@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(_accelerator, "BUILTIN", ("nodevice",))
    assert _accelerator.current_accelerator() is None


def test_pin_memory_without_accelerator_raises_torchs_error(no_accelerator):
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(2).pin_memory()
    with pytest.raises(RuntimeError) as ours:
        ember.zeros(2).pin_memory()
    assert str(ours.value) == str(theirs.value)
    assert ember.zeros(2).is_pinned() is False


FACTORIES = [
    ("empty", lambda m: m.empty(2, pin_memory=True)),
    ("zeros", lambda m: m.zeros(2, pin_memory=True)),
    ("ones", lambda m: m.ones(2, pin_memory=True)),
    ("full", lambda m: m.full((2,), 1.0, pin_memory=True)),
    ("rand", lambda m: m.rand(2, pin_memory=True)),
    ("randn", lambda m: m.randn(2, pin_memory=True)),
    ("randint", lambda m: m.randint(3, (2,), pin_memory=True)),
    ("arange", lambda m: m.arange(3, pin_memory=True)),
    ("linspace", lambda m: m.linspace(0, 1, 3, pin_memory=True)),
    ("eye", lambda m: m.eye(2, pin_memory=True)),
    ("tensor", lambda m: m.tensor([1.0], pin_memory=True)),
    ("empty_like", lambda m: m.empty_like(m.zeros(2), pin_memory=True)),
    ("zeros_like", lambda m: m.zeros_like(m.zeros(2), pin_memory=True)),
    ("full_like", lambda m: m.full_like(m.zeros(2), 1.0, pin_memory=True)),
    ("randn_like", lambda m: m.randn_like(m.zeros(2), pin_memory=True)),
    ("randint_like", lambda m: m.randint_like(m.zeros(2), 3, pin_memory=True)),
    ("randperm", lambda m: m.randperm(3, pin_memory=True)),
]


@pytest.mark.parametrize("make", [f[1] for f in FACTORIES], ids=[f[0] for f in FACTORIES])
def test_pin_memory_argument_is_honoured_or_refused_like_torch(no_accelerator, make):
    with pytest.raises(RuntimeError) as theirs:
        make(torch)
    with pytest.raises(RuntimeError) as ours:
        make(ember)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("make", [f[1] for f in FACTORIES], ids=[f[0] for f in FACTORIES])
def test_pin_memory_false_is_accepted(make):
    def unpinned(m):
        return make(_Unpinning(m))

    assert unpinned(ember).shape == unpinned(torch).shape


class _Unpinning:
    """The module, with ``pin_memory=True`` turned into ``pin_memory=False`` in its factories."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        found = getattr(self.module, name)
        if not callable(found) or isinstance(found, type):
            return found

        def call(*args, **kwargs):
            if kwargs.get("pin_memory"):
                kwargs["pin_memory"] = False
            return found(*args, **kwargs)

        return call


def test_layout_and_memory_format_are_refused_not_ignored():
    with pytest.raises(TypeError, match="layout"):
        ember.empty(2, layout="sparse_coo")
    with pytest.raises(TypeError, match="memory_format"):
        ember.zeros_like(ember.zeros(2), memory_format="channels_last")
    with pytest.raises(TypeError, match="unexpected keyword argument 'pin_memroy'"):
        ember.empty(2, pin_memroy=True)
