"""Page-locked ("pinned") host memory: ``Tensor.pin_memory()`` and ``Tensor.is_pinned()``.

A pinned tensor is an ordinary CPU tensor whose bytes come from an accelerator runtime's
``host_alloc`` (page-locked, so the device copies it by DMA and ``non_blocking=True`` copies can
return before they finish). Only runtimes that offer ``host_alloc``/``is_pinned`` (CUDA) pin.
"""

from __future__ import annotations

import math

NO_ACCELERATOR = "Cannot access accelerator device when none is available."  # torch's words
NO_PINNED_ALLOCATOR = (
    "pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator is "
    "available on this system."
)


def pinning_runtime(device=None):
    """The runtime of the accelerator that pins for ``device`` (default: the current one)."""
    from ._accelerator import current_accelerator
    from ._device import device as Device
    from .dispatcher.devices import REGISTRY

    device_type = current_accelerator() if device is None else Device(device).type
    if device_type is None:
        raise RuntimeError(NO_ACCELERATOR)
    runtime = REGISTRY.backend(device_type).runtime
    if getattr(runtime, "host_alloc", None) is None:
        raise RuntimeError(f"pin_memory(): the {device_type} backend cannot pin host memory")
    return runtime


def is_pinned(self, device=None) -> bool:
    """Whether this CPU tensor's memory is page-locked (False on devices, or without CUDA)."""
    if self.device.type != "cpu":
        return False
    try:
        runtime = pinning_runtime(device)
    except RuntimeError:
        return False
    return bool(runtime.is_pinned(self._storage.owner))


def pin_memory(self, device=None):
    """A copy of this CPU tensor in page-locked memory (itself when already pinned).

    Example:
        >>> batch = ember.randn(64, 3, 32, 32).pin_memory()
        >>> batch.to("cuda", non_blocking=True)
    """
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.device}' memory: only CPU tensors can be pinned")
    if is_pinned(self, device):
        return self
    from ._factories import from_numpy

    runtime = pinning_runtime(device)
    count = math.prod(self.shape)
    raw = runtime.host_alloc(count * self.dtype.itemsize)
    array = raw.view(self.dtype.np)[:count].reshape(tuple(self.shape))
    out = from_numpy(array)
    out.copy_(self.detach())
    return out


def pin_result(t, pin: bool, op: str):
    """A factory's ``pin_memory=`` argument: the tensor pinned, or torch's refusal."""
    if not pin:
        return t
    from ._accelerator import current_accelerator

    if current_accelerator() is None:
        raise RuntimeError(NO_PINNED_ALLOCATOR)
    if t.device.type != "cpu":
        raise RuntimeError(f"{op}(): only CPU tensors can be pinned, not {t.device} ones")
    return pin_memory(t)


def pinned_empty(shape: tuple, dtype, runtime):
    """An uninitialised pinned CPU tensor (for non-blocking device-to-host copies)."""
    from ._factories import from_numpy

    count = math.prod(shape)
    raw = runtime.host_alloc(count * dtype.itemsize)
    return from_numpy(raw.view(dtype.np)[:count].reshape(shape))
