"""``ember.accelerator``: ``torch.accelerator``, the device-generic API over the current
accelerator, so that code written as PyTorch's tutorials now write it runs unchanged::

    acc = ember.accelerator
    device = acc.current_accelerator().type if acc.is_available() else "cpu"

PyTorch has one accelerator per build. ember's are its installed device plugins, so the
accelerator is the first of ``cuda`` (CUDA or ROCm), ``xpu`` (OpenCL) and the other plugin
device types that has a device; with none available, the first one installed (as a CUDA build
of torch on a machine without a GPU answers ``cuda``). Every call goes to that type's
``ember.<type>`` module (ember/_accelerator.py). Without an available accelerator the functions
that need one raise PyTorch's RuntimeError.
"""

from __future__ import annotations

import warnings

from . import _accelerator
from ._device import device as _device

__all__ = [
    "current_accelerator",
    "current_device_idx",
    "current_device_index",
    "current_stream",
    "device_count",
    "device_index",
    "empty_cache",
    "empty_host_cache",
    "get_device_capability",
    "get_memory_info",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device_idx",
    "set_device_index",
    "set_stream",
    "synchronize",
]

# Before any other plugin device type: PyTorch's own accelerators, in the order it checks them.
PREFERRED = ("cuda", "xpu")
# Device types that are never an accelerator.
HOST = ("cpu", "meta")
NONE_AVAILABLE = "Cannot access accelerator device when none is available."
_EXPECTED = "Expected a torch.device with a specified index or an integer, but got:"


def _device_types() -> list[str]:
    """Every accelerator device type an installed plugin declares, PREFERRED first."""
    from .dispatcher.devices import REGISTRY
    from .dispatcher.plugins import BACKENDS_GROUP

    declared = {
        device_type
        for record in REGISTRY.host.records(BACKENDS_GROUP)
        if record.ok
        for device_type in record.device_types
    }
    others = sorted(declared - set(PREFERRED) - set(HOST))
    return [t for t in PREFERRED if t in declared] + others


def _available_type() -> str | None:
    for device_type in _device_types():
        if _accelerator.module(device_type).is_available():
            return device_type
    return None


def current_accelerator(check_available: bool = False):
    """The accelerator's device (no index), or None. Without ``check_available`` an installed
    accelerator with no device is still returned, as torch returns its build's."""
    found = _available_type()
    if found is None and not check_available:
        installed = _device_types()
        found = installed[0] if installed else None
    return None if found is None else _device(found)


def is_available() -> bool:
    return _available_type() is not None


def device_count() -> int:
    found = _available_type()
    return 0 if found is None else _accelerator.module(found).device_count()


def _module():
    found = _available_type()
    if found is None:
        raise RuntimeError(NONE_AVAILABLE)
    return _accelerator.module(found)


def _index(device, optional: bool = True):
    """torch's ``_get_device_index``: an int, a device or a string of the accelerator's type
    (checked here), None the current device when ``optional``; the device module resolves it."""
    module = _module()
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device) and device.type != module.device_type:
        raise ValueError(
            f"{device.type} doesn't match the current accelerator {module.device_type}."
        )
    if (
        isinstance(device, bool)
        or not isinstance(device, (int, _device, type(None)))
        or (device is None and not optional)
    ):
        raise ValueError(_EXPECTED + str(device))
    return module._index(device)


def current_device_index() -> int:
    return _module().current_device()


def set_device_index(device, /) -> None:
    """Make ``device`` the current one; a negative index is a no-op, as in torch."""
    index = _index(device, optional=False)
    if index >= 0:
        _module().set_device(index)


def _deprecated(function, replacement: str):
    def call(*args):
        warnings.warn(f"Use `{replacement}` instead.", FutureWarning, stacklevel=2)
        return function(*args)

    call.__name__ = call.__qualname__ = function.__name__.replace("index", "idx")
    call.__doc__ = f"(Deprecated) ``{replacement}``."
    return call


current_device_idx = _deprecated(current_device_index, "current_device_index")
set_device_idx = _deprecated(set_device_index, "set_device_index")


class device_index:  # noqa: N801 - PyTorch's name
    """Context manager making device ``device`` current inside the block (None: no change)."""

    def __init__(self, device, /) -> None:
        self.index = device
        self.previous = None

    def __enter__(self):
        if self.index is not None:
            module = _module()
            self.previous = module.current_device()
            if self.index != self.previous:
                module.set_device(self.index)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None and self.previous != self.index:
            _module().set_device(self.previous)


def current_stream(device=None, /):
    return _module().current_stream(_index(device))


def set_stream(stream) -> None:
    """Make ``stream`` current on its device (the backend's stream context, entered for
    good)."""
    _module().stream(stream).__enter__()


def synchronize(device=None, /) -> None:
    _module().synchronize(_index(device))


def get_device_capability(device=None, /) -> dict:
    """``{"supported_dtypes": set of dtypes}``: what a tensor on the device can hold."""
    from . import _dtype as dt

    _index(device)  # validates the device, as torch does
    return {"supported_dtypes": set(dt.EVERY)}


# ---- memory: the accelerator's caching allocator --------------------------------------------
def empty_cache() -> None:
    _module().empty_cache()


def empty_host_cache() -> None:
    """Pinned host memory is not cached separately in ember: nothing to release."""


def memory_stats(device_index=None, /) -> dict:
    return _module().memory_stats(_index(device_index))


def memory_allocated(device_index=None, /) -> int:
    return _module().memory_allocated(_index(device_index))


def max_memory_allocated(device_index=None, /) -> int:
    return _module().max_memory_allocated(_index(device_index))


def memory_reserved(device_index=None, /) -> int:
    return _module().memory_reserved(_index(device_index))


def max_memory_reserved(device_index=None, /) -> int:
    return _module().max_memory_reserved(_index(device_index))


def reset_peak_memory_stats(device_index=None, /) -> None:
    _module().reset_peak_memory_stats(_index(device_index))


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    """ember's allocators keep no accumulated counters beside the peaks: the peaks reset."""
    _module().reset_peak_memory_stats(_index(device_index))


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of the device, from its runtime."""
    return _module().mem_get_info(_index(device_index))
