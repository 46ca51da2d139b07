"""Device tensors between processes: inter-process memory handles where the runtime has them.

A runtime that offers ``ipc_handle(handle, index) -> bytes`` (the handle of one of its
allocations, which another process can open) and ``open_ipc_handle(data, index) -> handle``
(an allocation handle of the exporter's memory, open while it lives) shares device tensors:
CUDA (``cuIpcGetMemHandle``), HIP (``hipIpcGetMemHandle``) and the CUDA emulator (a memfd).
The handle names the whole allocation, which the caching allocator may have split, so the
storage's offset in it travels too. As in PyTorch, the sending process must keep the tensor
alive while receivers use it, and a process opens each handle once (the driver's rule), so
storages from one allocation share one opened handle. The sender's queued work on the device
is finished before a handle leaves, so the receiver reads what the sender wrote.
"""

from __future__ import annotations

import threading
import weakref

from .._device import device as Device
from .._storage import Storage, new_storage
from .._tensor import Tensor, is_contiguous, make
from ..dispatcher.memory import backend_for, normalize_device

_opened: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (device, data) -> handle
# (device, data, offset, nbytes) -> Storage: what this process sent, so that a tensor coming
# back maps to its own storage (a driver refuses to open its own process's handles).
_storages: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_lock = threading.Lock()


def shares(runtime) -> bool:
    return hasattr(runtime, "ipc_handle") and hasattr(runtime, "open_ipc_handle")


def reduce_device_tensor(tensor: Tensor, state):
    storage = tensor._storage
    index = storage.device.index or 0
    # Kernels this process queued may still be writing the tensor when the receiver reads it:
    # finish them first (PyTorch sends an IPC event to wait on; a send-time sync is simpler).
    storage.runtime.synchronize(index)
    if isinstance(storage.owner, _Opened):  # received: forward the exporter's own handle
        data = storage.owner.data
    else:
        data = storage.runtime.ipc_handle(storage.handle, index)
    meta = (tensor._offset, tensor._shape, tensor._stride, tensor._requires_grad)
    where = (str(storage.device), data, storage.byte_offset, storage._nbytes)
    with _lock:
        _storages[where] = storage
    return (rebuild_device_tensor, (type(tensor), tensor._dtype, meta, where), state)


class _Opened:
    """An opened handle and the exporter's handle ``data`` it came from; weakly cached so that
    every storage over it shares one opening (drivers refuse to re-export opened memory)."""

    __slots__ = ("__weakref__", "data", "handle")

    def __init__(self, handle, data: bytes):
        self.handle = handle
        self.data = data


def _open(device, runtime, data: bytes) -> _Opened:
    key = (str(device), data)
    with _lock:
        found = _opened.get(key)
        if found is None:
            found = _Opened(runtime.open_ipc_handle(data, device.index or 0), data)
            _opened[key] = found
        return found


def _storage(name: str, data: bytes, byte_offset: int, nbytes: int) -> Storage:
    device = normalize_device(Device(name))
    runtime = backend_for(device.type).runtime
    opened = _open(device, runtime, data)
    base = runtime.address(opened.handle)
    ptr = None if base is None else base + byte_offset
    storage = new_storage(device, nbytes, opened.handle, byte_offset, ptr, opened, runtime)
    with _lock:
        _storages[name, data, byte_offset, nbytes] = storage
    return storage


def rebuild_device_tensor(cls, dtype, metadata, where) -> Tensor:
    from .reductions import finish

    with _lock:
        storage = _storages.get(where)
    if storage is None:
        storage = _storage(*where)
    offset, shape, stride, requires_grad = metadata
    t = make(storage, shape, stride, offset, dtype, is_contiguous(shape, stride))
    return finish(t, cls, requires_grad)
