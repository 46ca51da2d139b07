"""Storage: a span of device memory that tensors (and their views) share."""

from __future__ import annotations

import ctypes

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

    # Memory ember must never write (a read-only numpy array: bytes, a read-only mmap). A class
    # attribute, so that the storage of every op's output costs nothing more to build; writers
    # read it where they already check the written-to tensor (see ReadOnlyStorage).
    readonly = False

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

    def is_shared(self) -> bool:
        """Whether the bytes are in shared memory (``share_memory_``, DataLoader workers' batches);
        CUDA memory counts as shared, as in PyTorch."""
        from .utils.data._shared_memory import _Mapping

        return isinstance(self.owner, _Mapping) or self.device.type == "cuda"

    def share_memory_(self) -> Storage:
        """Move the bytes into shared memory, in place: every tensor over this storage follows,
        and processes forked afterwards write the same memory (Hogwild training). A no-op when
        already shared and for device memory, as in PyTorch. A read-only storage's copy is
        writable (it no longer aliases the read-only array)."""
        if self.device.type != "cpu" or self.is_shared():
            return self
        from .utils.data._shared_memory import _Attached, _Mapping

        segment = _Attached(create=True, size=max(self.nbytes, 1))
        segment.unlink()  # forked children inherit the mapping; no name outlives the process
        mapping = _Mapping(segment)
        address = mapping.array.ctypes.data
        if self.nbytes:
            ctypes.memmove(address, self.ptr, self.nbytes)
        self.handle = self.ptr = address
        self.byte_offset = 0
        self.owner = mapping
        if self.readonly:
            self.__class__ = Storage
        return self

    def host_bytes(self) -> np.ndarray:
        """A uint8 numpy array over these bytes that keeps the storage alive (host memory only);
        read-only when the storage is."""
        if self.ptr is None or not getattr(self.runtime, "host_memory", False):
            raise TypeError(
                f"can't view {self.device} memory from numpy: copy the tensor to the host with "
                ".cpu() first"
            )
        return np.asarray(_HostBytes(self))


class ReadOnlyStorage(Storage):
    """A storage over memory that must not be written: ``from_numpy`` of a non-writable array.

    Writing there would corrupt immutable Python objects (``np.frombuffer(b"...")``) or crash the
    process (a read-only ``mmap``), so every write path refuses it (``read_only_error``), and
    numpy views of it are read-only too."""

    __slots__ = ()
    readonly = True

    def __repr__(self) -> str:
        return f"ember.UntypedStorage(device={self.device}, nbytes={self.nbytes}, read-only)"


def read_only_error(op_name: str) -> RuntimeError:
    return RuntimeError(
        f"{op_name}(): the tensor's memory is read-only (it was made from a read-only numpy "
        "array); clone() it first, or make the array writable before ember.from_numpy()"
    )


class _HostBytes:
    """numpy keeps this object as the array's base, and it keeps the storage (and memory) alive.

    The memory's owner is held too: ``Tensor.resize_`` may move the storage to a larger
    allocation, and the array must not be left pointing at freed memory."""

    __slots__ = ("__array_interface__", "owner", "storage")

    def __init__(self, storage: Storage):
        self.storage = storage
        self.owner = storage.owner
        self.__array_interface__ = {
            "data": (storage.ptr, storage.readonly),
            "shape": (storage.nbytes,),
            "typestr": "|u1",
            "version": 3,
        }
