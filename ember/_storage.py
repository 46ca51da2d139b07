"""Storage: a span of device memory that tensors (and their views) share."""

from __future__ import annotations

import numpy as np


class Storage:
    """Bytes on one device.

    ``handle`` is the backend's handle of the allocation the bytes live in and ``byte_offset`` where
    they start inside it (the caching allocator hands out pieces of larger segments). ``ptr`` is the
    integer address of the first byte where the device has addresses (CPU, CUDA, HIP), else None.
    ``version`` counts in-place writes, for autograd's check of tensors saved for backward; views
    share it because they share the storage. ``owner`` keeps alive whatever frees the memory: a
    caching-allocator lease, a numpy array given to ``from_numpy``, or a raw backend allocation.
    """

    __slots__ = ("byte_offset", "device", "handle", "nbytes", "owner", "ptr", "runtime", "version")

    def __init__(self, device, nbytes, handle, byte_offset, ptr, owner, runtime):
        self.device = device
        self.nbytes = nbytes
        self.handle = handle
        self.byte_offset = byte_offset
        self.ptr = ptr
        self.owner = owner
        self.runtime = runtime
        self.version = 0

    def size(self) -> int:
        return self.nbytes

    def data_ptr(self) -> int:
        return self.ptr if self.ptr is not None else 0

    def __repr__(self) -> str:
        return f"ember.UntypedStorage(device={self.device}, nbytes={self.nbytes})"

    def host_bytes(self) -> np.ndarray:
        """A uint8 numpy array over these bytes that keeps the storage alive (host memory only)."""
        if self.ptr is None or not getattr(self.runtime, "host_memory", False):
            raise TypeError(
                f"can't view {self.device} memory from numpy: copy the tensor to the host with "
                ".cpu() first"
            )
        return np.asarray(_HostBytes(self))


class _HostBytes:
    """numpy keeps this object as the array's base, and it keeps the storage (and memory) alive.

    The memory's owner is held too: ``Tensor.resize_`` may move the storage to a larger
    allocation, and the array must not be left pointing at freed memory."""

    __slots__ = ("__array_interface__", "owner", "storage")

    def __init__(self, storage: Storage):
        self.storage = storage
        self.owner = storage.owner
        self.__array_interface__ = {
            "data": (storage.ptr, False),
            "shape": (storage.nbytes,),
            "typestr": "|u1",
            "version": 3,
        }
