"""Storage: a span of device memory that tensors (and their views) share."""

from __future__ import annotations

import ctypes

import numpy as np

from . import _inference, _shm
from ._storage_api import UntypedStorageMethods


class Storage(UntypedStorageMethods):
    """Bytes on one device.

    ``handle`` is the backend's handle of the allocation the bytes live in and ``byte_offset`` where
    they start inside it (the caching allocator hands out pieces of larger segments). ``ptr`` is the
    integer address of the first byte where the device has addresses (CPU, CUDA, HIP), else None.
    ``version`` counts in-place writes, for autograd's check of tensors saved for backward; views
    share it because they share the storage. ``owner`` keeps alive whatever frees the memory: a
    caching-allocator lease, a numpy array given to ``from_numpy``, or a raw backend allocation.
    Users meet it as ``ember.UntypedStorage``: PyTorch's methods come from the mixin.
    """

    __slots__ = (
        "__weakref__",  # ember.multiprocessing maps a segment sent back to its storage
        "_nbytes",
        "byte_offset",
        "device",
        "handle",
        "owner",
        "ptr",
        "runtime",
        "version",
    )

    # Memory ember must never write (a read-only numpy array: bytes, a read-only mmap). A class
    # attribute, so that the storage of every op's output costs nothing more to build; writers
    # read it where they already check the written-to tensor (see ReadOnlyStorage).
    readonly = False
    # Allocated inside inference_mode(): the class says so (InferenceStorage), so that the
    # storage of every op's output costs no slot more to build (ember/_inference.py).
    inference = False

    # No __init__: ``Storage()`` is then built by C alone (type_call), cheaper than
    # ``object.__new__(Storage)`` from Python, and empty() makes one for every op's output;
    # new_storage() below builds a filled one.

    def size(self) -> int:
        return self._nbytes

    def data_ptr(self) -> int:
        return self.ptr if self.ptr is not None else 0

    def __repr__(self) -> str:
        return f"ember.UntypedStorage(device={self.device}, nbytes={self._nbytes})"

    def is_shared(self) -> bool:
        """Whether the bytes are in shared memory (``share_memory_``, sent through
        ``ember.multiprocessing``, DataLoader workers' batches); CUDA memory counts as shared,
        as in PyTorch."""
        return isinstance(self.owner, _shm.Segment) or self.device.type == "cuda"

    def share_memory_(self) -> Storage:
        """Move the bytes into shared memory, in place: every tensor over this storage follows,
        and processes forked afterwards, or sent it through ``ember.multiprocessing``, write
        the same memory (Hogwild training). The segment's kind follows the sharing strategy.
        A no-op when already shared and for device memory that travels by inter-process handle
        (CUDA), as in PyTorch; other device memory (xpu) cannot be shared. A read-only storage's
        copy is writable (it no longer aliases the read-only array)."""
        if self.device.type == "cpu":
            if not self.is_shared():
                self._share(_shm.strategy == "file_system")
        elif not (self.device.type == "cuda" or hasattr(self.runtime, "ipc_handle")):
            raise RuntimeError(
                f"share_memory_(): {self.device.type} memory cannot be shared between "
                "processes (its runtime has no inter-process handles); share a CPU copy: "
                "t.cpu().share_memory_()"
            )
        return self

    def _share(self, named: bool) -> tuple[_shm.Segment, int]:
        """The segment holding these bytes, of the kind asked for (``named``: one that travels
        by name, else by descriptor), and their offset in it; moves them into a new one first
        when needed (processes that mapped the old one no longer see this one's writes)."""
        segment = self.owner
        if isinstance(segment, _shm.Segment) and (segment.name is not None or not named):
            return segment, self.ptr - segment.address
        segment = _shm.named(self._nbytes) if named else _shm.anonymous(self._nbytes)
        if self._nbytes:
            ctypes.memmove(segment.data, self.ptr, self._nbytes)
        self.handle = self.ptr = segment.data
        self.byte_offset = 0
        self.owner = segment
        if self.readonly:
            self.__class__ = InferenceStorage if self.inference else Storage
        return segment, segment.data - segment.address

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
        return f"ember.UntypedStorage(device={self.device}, nbytes={self._nbytes}, read-only)"


class InferenceStorage(Storage):
    """The storage of a tensor made inside ``inference_mode()``: ``is_inference()`` holds for
    every tensor over it."""

    __slots__ = ()
    inference = True


class ReadOnlyInferenceStorage(ReadOnlyStorage):
    __slots__ = ()
    inference = True


_INFERENCE_CLASS = {Storage: InferenceStorage, ReadOnlyStorage: ReadOnlyInferenceStorage}


def new_storage(device, nbytes, handle, byte_offset, ptr, owner, runtime, kind=Storage):
    """A ``kind`` (Storage or ReadOnlyStorage) over ``nbytes`` at ``ptr``: the bytes start at
    ``byte_offset`` in ``handle``, and ``owner`` keeps them alive. Made inside
    ``inference_mode()``, it is an inference tensor's (ember/_tensor.py's empty() builds the same
    record inline, without this frame)."""
    storage = kind()
    storage.device = device
    storage._nbytes = nbytes
    storage.handle = handle
    storage.byte_offset = byte_offset
    storage.ptr = ptr
    storage.owner = owner
    storage.runtime = runtime
    storage.version = 0
    if _inference.OPEN.blocks and _inference.enabled():
        mark_inference(storage)
    return storage


def mark_inference(storage: Storage) -> None:
    """Make ``storage`` an inference tensor's (its class; nothing else changes)."""
    found = _INFERENCE_CLASS.get(type(storage))
    if found is not None:
        storage.__class__ = found


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
            "shape": (storage._nbytes,),
            "typestr": "|u1",
            "version": 3,
        }
