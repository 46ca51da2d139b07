"""Allocating storage on a device: the caching allocator for large requests, raw for small ones."""

from __future__ import annotations

from ember._device import CPU
from ember._device import device as Device
from ember._storage import Storage

from .devices import REGISTRY, on_reset

_BY_TYPE: dict = {}  # device type -> DeviceBackend, filled on first use


# id(device) -> (alloc_addressed, cache_min_bytes, runtime): the fast path of ember._tensor.empty
# for requests below the caching threshold. Keyed by id: devices are interned, and device.__hash__
# runs Python code on every lookup.
SMALL: dict = {}


def _forget() -> None:
    _BY_TYPE.clear()
    SMALL.clear()


on_reset(_forget)


def backend_for(device_type: str):
    found = _BY_TYPE.get(device_type)
    if found is None:
        found = REGISTRY.backend(device_type)
        _BY_TYPE[device_type] = found
    return found


def small_allocator(device):
    """``(alloc_addressed, cache_min_bytes, runtime)`` for a device's small requests; memoised."""
    found = SMALL.get(id(device))
    if found is None:
        backend = backend_for(device.type)
        runtime = backend.runtime
        index = device.index
        addressed = getattr(runtime, "alloc_addressed", None)
        if addressed is None:

            def addressed(nbytes, _alloc=runtime.alloc, _address=runtime.address):
                handle = _alloc(nbytes, index)
                return handle, _address(handle)

        found = (addressed, backend.cache_min_bytes, runtime)
        SMALL[id(device)] = found
    return found


def new_storage(device, nbytes: int) -> Storage:
    """Uninitialised storage of ``nbytes`` on ``device`` (a normalised device)."""
    backend = _BY_TYPE.get(device.type) or backend_for(device.type)
    runtime = backend.runtime
    if nbytes >= backend.cache_min_bytes:
        handle, offset, lease = backend.allocator(device.index).allocate(nbytes)
        base = runtime.address(handle)
        ptr = None if base is None else base + offset
        return Storage(device, nbytes, handle, offset, ptr, lease, runtime)
    # Below the caching threshold the runtime's handle frees itself when collected.
    handle = runtime.alloc(nbytes, device.index)
    return Storage(device, nbytes, handle, 0, runtime.address(handle), handle, runtime)


def normalize_device(dev) -> Device:
    """A concrete device: ``"cuda"`` becomes ``cuda:<current>``; the device type is validated."""
    if dev is None:
        from ember._device import DEFAULT

        dev = DEFAULT.device
    elif not isinstance(dev, Device):
        if isinstance(dev, int):
            raise TypeError(
                f"device index {dev} given without a type; write ember.device('cuda', {dev})"
            )
        dev = Device(dev)
    if dev is CPU:
        return dev
    if dev.type == "cpu":
        return CPU
    backend = _BY_TYPE.get(dev.type) or backend_for(dev.type)
    if dev.index is None:
        current = getattr(backend.runtime, "current_device", None)
        return Device(dev.type, current() if current else 0)
    count = backend.device_count()
    if dev.index >= count:
        raise RuntimeError(
            f"{dev} is not available: {backend.name} found {count} {dev.type} device(s)"
        )
    return dev
