"""Allocating storage on a device: the caching allocator for large requests, raw for small ones."""

from __future__ import annotations

import contextlib
import weakref

from ember import _inference
from ember._device import CPU
from ember._device import device as Device
from ember._storage import new_storage

from .devices import REGISTRY, on_reset

_BY_TYPE: dict = {}  # device type -> DeviceBackend, filled on first use


# id(device) -> the device, for each device whose ``_route`` is set: (alloc_small,
# cache_min_bytes, runtime, alloc_cached, address, leading), how ember._tensor.empty allocates
# there, memoised on the (interned) device so that an op's output reads one attribute before
# the allocation itself. forget_routes() unsets them all.
ROUTES: dict = {}

# ember.profiler's profile_memory: told of every allocation and free while set (see observe).
_OBSERVER: list = [None]


def observe(callback) -> None:
    """Tell ``callback(nbytes, address, device)`` of every storage allocated from now on, and
    of its free when the memory goes back (negative ``nbytes``); ``None`` stops. The routes are
    rebuilt, so outside a memory profile the allocation path has no reporting in it at all."""
    _OBSERVER[0] = callback
    forget_routes()


def forget_routes() -> None:
    """Unset every device's allocation route: the next allocation there finds it again."""
    with _inference.LOCK:
        for device in ROUTES.values():
            device._route = None
        ROUTES.clear()


def _freed(nbytes: int, address, device) -> None:
    callback = _OBSERVER[0]
    if callback is not None:  # a free after the profile ended is nobody's event
        callback(-nbytes, address, device)


def _report(nbytes: int, address, owner, device) -> None:
    callback = _OBSERVER[0]
    if callback is None or nbytes == 0:
        return
    callback(nbytes, address, device)
    # The owner's death is the free: a cffi buffer, or the cached block's Storage; an owner
    # without weak references (TypeError) leaves its free unreported.
    with contextlib.suppress(TypeError):
        weakref.finalize(owner, _freed, nbytes, address, device).atexit = False


def _reporting(small, address, cached, device):
    """The two allocation routes of ``device``, reporting to the observer."""

    def small_reported(leading, nbytes):
        handle = small(leading, nbytes)
        _report(nbytes, address(handle), handle, device)
        return handle

    def cached_reported(nbytes):
        storage = cached(nbytes)
        _report(nbytes, storage.ptr, storage, device)
        return storage

    return small_reported, cached_reported


def _forget() -> None:
    _BY_TYPE.clear()
    forget_routes()


on_reset(_forget)


def backend_for(device_type: str):
    found = _BY_TYPE.get(device_type)
    if found is None:
        found = REGISTRY.backend(device_type)
        _BY_TYPE[device_type] = found
    return found


def allocation_route(device):
    """``(alloc_small, cache_min_bytes, runtime, alloc_cached, address, leading)`` of a device;
    memoised.

    Requests below ``cache_min_bytes`` go straight to the runtime (``alloc_small(leading,
    nbytes) -> handle``, then ``address(handle)``; the handle frees itself when collected),
    larger ones through the device's caching allocator (``alloc_cached(nbytes) -> Storage``). A
    runtime's ``small_alloc``, when it has one, gives the first step and the address: C-level
    callables (the CPU's), so that an op's output pays no Python frame for its memory. Its
    ``(alloc, leading, address)`` form has ``alloc(leading, nbytes)`` called directly: the
    CPU's is cffi's allocator with the ``char[]`` type first, which a ``functools.partial``
    would cost a new argument tuple per call to bind.
    """
    found = device._route
    if found is None:
        backend = backend_for(device.type)
        runtime = backend.runtime
        index = device.index
        allocate, address = backend.allocator(index).allocate, runtime.address
        small_alloc = getattr(runtime, "small_alloc", ())
        leading = None
        if len(small_alloc) == 3:
            small, leading, small_address = small_alloc
        elif small_alloc:
            alloc_nbytes, small_address = small_alloc

            def small(_leading, nbytes):
                return alloc_nbytes(nbytes)

        else:

            def small(_leading, nbytes, _alloc=runtime.alloc):
                return _alloc(nbytes, index)

            small_address = address

        def cached(nbytes):
            handle, offset, lease = allocate(nbytes)
            base = address(handle)
            ptr = None if base is None else base + offset
            return new_storage(device, nbytes, handle, offset, ptr, lease, runtime)

        if _OBSERVER[0] is not None:
            small, cached = _reporting(small, small_address, cached, device)
        found = (small, backend.cache_min_bytes, runtime, cached, small_address, leading)
        with _inference.LOCK:
            if _inference.OPEN.blocks:
                found = _marking(found, device)
            device._route = found
            ROUTES[id(device)] = device
    return found


def _marking(route, device):
    """``route`` while an ``inference_mode()`` block is open in some thread: empty() does not
    check the mode (ember/_inference.py), so this route's threshold of 0 sends every allocation
    to empty()'s general branch, whose allocator builds the storage with ``new_storage()``, which
    marks an inference tensor's."""
    small, cache_min_bytes, runtime, cached, address, leading = route

    def allocate(nbytes):
        if nbytes >= cache_min_bytes:
            return cached(nbytes)
        handle = small(leading, nbytes)
        return new_storage(device, nbytes, handle, 0, address(handle), handle, runtime)

    return (small, 0, runtime, allocate, address, leading)


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
    if getattr(backend.runtime, "indexed", True) is False:  # meta: no index, like cpu
        return Device(dev.type)
    if dev.index is None:
        current = getattr(backend.runtime, "current_device", None)
        return Device(dev.type, current() if current else 0)
    count = backend.device_count()
    if dev.index >= count:
        raise RuntimeError(
            f"{dev} is not available: {backend.name} found {count} {dev.type} device(s)"
        )
    return dev
