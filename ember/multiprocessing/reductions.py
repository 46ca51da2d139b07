"""Pickler reductions that share tensor memory between processes instead of copying it.

Registered with ``multiprocessing``'s ``ForkingPickler`` (which every Queue, SimpleQueue, Pool,
Pipe and spawned Process argument goes through) when ``ember.multiprocessing`` is imported.

A CPU tensor travels as its metadata plus its storage; the storage moves into shared memory on
its first send (in place: the sender's tensors follow it) and travels as

- ``file_descriptor``: a duplicate of the segment's descriptor, handed over a Unix socket by
  ``multiprocessing``'s resource sharer (the sender must still be alive when the message is
  read; pool workers wait at exit until theirs are: ``_inflight``);
- ``file_system``: the segment's name, plus one reference that the receiver adopts.

Each process keeps weak maps from a segment's identity (its inode) to its mapping and from
``(segment, offset, size)`` to the storage over it, so a storage sent twice, or sent back,
arrives as the same storage object: views stay views and autograd's version counter is shared.
Device tensors travel as inter-process handles where the runtime has them (CUDA, HIP: see
``_device``); other device memory (xpu) is copied, with a warning, since it cannot be shared.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from multiprocessing import util
from multiprocessing.reduction import ForkingPickler

from .. import _shm
from .._device import CPU
from .._serialization import python_state
from .._storage import ReadOnlyStorage, Storage, new_storage
from .._tensor import Tensor, is_contiguous, make
from ..dispatcher.memory import backend_for
from . import _device, _inflight


class SharedCache:
    """Weak maps from what identifies shared memory across processes to this process's
    objects: segments by key, storages by ``(segment key, offset, nbytes)``."""

    def __init__(self):
        self.segments = weakref.WeakValueDictionary()
        self.storages = weakref.WeakValueDictionary()
        self._after_fork()
        util.register_after_fork(self, SharedCache._after_fork)

    def _after_fork(self):
        self.lock = threading.Lock()  # a fork may happen while another thread holds it

    def segment(self, key):
        with self.lock:
            return self.segments.get(key)

    def remember(self, segment: _shm.Segment, offset: int, storage: Storage) -> None:
        with self.lock:
            self.segments[segment.key] = segment
            self.storages[segment.key, offset, storage._nbytes] = storage

    def storage(self, segment: _shm.Segment, offset: int, nbytes: int) -> Storage:
        """The storage of ``nbytes`` at ``offset`` in ``segment``: the known one, or a new one."""
        key = (segment.key, offset, nbytes)
        with self.lock:
            found = self.storages.get(key)
            if found is None:
                ptr = segment.address + offset
                runtime = backend_for("cpu").runtime
                found = new_storage(CPU, nbytes, ptr, 0, ptr, segment, runtime)
                self.segments[segment.key] = segment
                self.storages[key] = found
            return found


shared_cache = SharedCache()


def _strategy() -> str:
    return _shm.strategy


# ---- storages --------------------------------------------------------------------------------
def reduce_storage(storage: Storage):
    if storage.device.type != "cpu":
        raise RuntimeError(
            f"Cannot pickle {storage.device.type} storage; try pickling a "
            f"{storage.device.type} tensor instead"
        )
    if storage._nbytes == 0:  # nothing to share, and nothing maps zero bytes
        return (rebuild_storage_empty, ())
    if _strategy() == "file_system":
        segment, offset = storage._share(named=True)
        segment.incref()  # the message's reference, adopted (or dropped) by its receiver
        shared_cache.remember(segment, offset, storage)
        return (rebuild_storage_filename, (segment.name, offset, storage._nbytes))
    segment, offset = storage._share(named=False)
    fd, opened = segment.descriptor()
    try:
        handle = _inflight.dup_fd(fd)
    finally:
        if opened:
            os.close(fd)
    shared_cache.remember(segment, offset, storage)
    return (rebuild_storage_fd, (handle, segment.key, offset, storage._nbytes))


def rebuild_storage_fd(handle, key: tuple, offset: int, nbytes: int) -> Storage:
    segment = shared_cache.segment(key)  # alive here, so its inode cannot have been reused
    try:
        fd = handle.detach()  # also when known: the sender holds a duplicate until then
    except OSError as error:
        if segment is not None:
            return shared_cache.storage(segment, offset, nbytes)  # the sender is gone
        raise RuntimeError(
            "a tensor arrived from a process that exited before it was received: with the "
            "'file_descriptor' sharing strategy the sender must stay alive until the receiver "
            "has it (keep it waiting, or use ember.multiprocessing.set_sharing_strategy"
            f"('file_system')) ({type(error).__name__}: {error})"
        ) from None
    if segment is None:
        try:
            segment = _shm.from_fd(fd)  # the segment owns the descriptor now
        except BaseException:
            os.close(fd)
            raise
    else:
        os.close(fd)
    return shared_cache.storage(segment, offset, nbytes)


def rebuild_storage_filename(name: str, offset: int, nbytes: int) -> Storage:
    fd = _shm.open_fd(name)
    try:
        segment = shared_cache.segment(_shm.fd_key(fd))
    except BaseException:
        os.close(fd)
        raise
    if segment is None:
        segment = _shm.map_named(name, fd)  # adopts the message's reference; closes fd
    elif segment.name == name:  # mapped here already: the message's reference goes back
        os.close(fd)
        segment.decref()
    else:  # mapped here by descriptor, which needs no name: drop the message's reference
        _shm.map_named(name, fd).release()
    return shared_cache.storage(segment, offset, nbytes)


def rebuild_storage_empty() -> Storage:
    from .. import empty

    return empty(0).untyped_storage()


# ---- tensors ---------------------------------------------------------------------------------
def reduce_tensor(tensor: Tensor):
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
        )
    device = tensor._storage.device
    state = python_state(tensor)  # Python attributes (nn.Buffer's persistent flag)
    if device.type != "cpu":
        if _device.shares(tensor._storage.runtime):
            return _device.reduce_device_tensor(tensor, state)
        return _reduce_by_copy(tensor, state)
    meta = (tensor._offset, tensor._shape, tensor._stride, tensor._requires_grad)
    return (rebuild_tensor, (type(tensor), tensor._storage, tensor._dtype, meta), state)


def rebuild_tensor(cls, storage, dtype, metadata) -> Tensor:
    offset, shape, stride, requires_grad = metadata
    t = make(storage, shape, stride, offset, dtype, is_contiguous(shape, stride))
    return finish(t, cls, requires_grad)


def finish(t: Tensor, cls, requires_grad: bool) -> Tensor:
    from ..nn.parameter import Parameter

    if issubclass(cls, Parameter):  # its constructor takes the flag (integer parameters)
        return cls(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t if cls is Tensor else t.as_subclass(cls)


def _reduce_by_copy(tensor: Tensor, state):
    device = tensor._storage.device
    warnings.warn(
        f"ember.multiprocessing: {device.type} tensors cannot be shared between processes "
        f"(the {device.type} runtime has no inter-process memory handles), so the receiver "
        "gets a copy and neither side sees the other's writes; send a CPU tensor to share "
        "memory",
        UserWarning,
        stacklevel=2,
    )
    host = tensor.detach().cpu()
    meta = (host._offset, host._shape, host._stride, tensor._requires_grad)
    args = (type(tensor), host._storage, host._dtype, meta, str(device))
    return (rebuild_device_copy, args, state)


def rebuild_device_copy(cls, storage, dtype, metadata, device: str) -> Tensor:
    offset, shape, stride, requires_grad = metadata
    host = make(storage, shape, stride, offset, dtype, is_contiguous(shape, stride))
    return finish(host.to(device), cls, requires_grad)


def init_reductions() -> None:
    """Make multiprocessing pickle tensors and storages through shared memory."""
    from ..nn.parameter import Buffer, Parameter

    for cls in (Storage, ReadOnlyStorage):
        ForkingPickler.register(cls, reduce_storage)
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
