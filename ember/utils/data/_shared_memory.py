"""Moving a batch from a worker to the main process with its tensor bytes in shared memory.

The batch is pickled with every tensor replaced by a persistent id, so pickle carries only the
structure and small metadata; the tensors' bytes are copied once into one shared-memory segment
per batch (``ember._shm``'s transient named segments). The main process maps the segment and
unlinks its name at once: the mapping outlives the name, so no segment can outlive the tensors
built over it, even if the process dies. Tensors that share a storage in the worker share one in
the main process.
"""

from __future__ import annotations

import io
import os
import pickle

import numpy as np

from ... import _dtype, _shm
from ..._device import CPU
from ..._serialization import storage_bytes
from ..._storage import new_storage
from ..._tensor import Tensor, contiguous_strides, host_array, is_contiguous, make
from ...dispatcher.memory import backend_for

_ALIGN = 64  # every storage starts on a cache line (and on any element size)


class _Pickler(pickle.Pickler):
    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.tensors: list[Tensor] = []
        self.ids: dict[int, int] = {}  # id(tensor) -> its persistent id: one tensor, one object

    def persistent_id(self, obj):
        if not isinstance(obj, Tensor):
            return None
        found = self.ids.get(id(obj))
        if found is None:
            found = self.ids[id(obj)] = len(self.tensors)
            self.tensors.append(obj)
        return found


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, tensors):
        super().__init__(file)
        self.tensors = tensors

    def persistent_load(self, pid):
        return self.tensors[pid]


def _span(tensors: list[Tensor]) -> tuple[int, int]:
    """The bytes ``[low, high)`` of their common storage that some tensors read."""
    low, high = None, 0
    for t in tensors:
        if not t.numel():
            continue
        first = t._offset + sum((n - 1) * s for n, s in zip(t._shape, t._stride) if s < 0)
        last = t._offset + sum((n - 1) * s for n, s in zip(t._shape, t._stride) if s > 0)
        size = t._dtype.itemsize
        low = first * size if low is None else min(low, first * size)
        high = max(high, (last + 1) * size)
    if low is None:
        return 0, 0
    return low - low % 8, high  # 8-aligned, so every dtype's element offset stays integral


def _plan(tensors: list[Tensor]):
    """``(regions, metas, size)``: what goes where in the segment, and how to rebuild tensors.

    A region is ``(start, nbytes, source)``: a tensor alone on its storage is copied compactly
    (a small view of a big dataset tensor must not drag the whole storage along); tensors that
    share a storage get the span they cover, ``source = (storage, low)``, and keep their
    strides into it. ``metas[i]`` rebuilds tensor ``i`` over its region.
    """
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(tensors):
        groups.setdefault(id(t._storage), []).append(i)
    regions, metas, size = [], [None] * len(tensors), 0
    for members in groups.values():
        if len(members) == 1:
            t = tensors[members[0]]
            regions.append((size, t.nbytes, t))
            placed = {members[0]: (None, 0)}
        else:
            low, high = _span([tensors[i] for i in members])
            regions.append((size, high - low, (tensors[members[0]]._storage, low)))
            placed = {
                i: (tensors[i]._stride, tensors[i]._offset - low // tensors[i]._dtype.itemsize)
                for i in members
            }
        for i, (stride, offset) in placed.items():
            t = tensors[i]
            subclass = None if type(t) is Tensor else type(t)
            device = None if t.device is CPU else str(t.device)
            metas[i] = (len(regions) - 1, t._shape, stride, offset, t._dtype.name)
            metas[i] += (t._requires_grad, subclass, device)
        size += -(-regions[-1][1] // _ALIGN) * _ALIGN
    return regions, metas, size


def _fill(buffer: np.ndarray, regions) -> None:
    for start, nbytes, source in regions:
        if isinstance(source, Tensor):  # written compactly, whatever its strides or device
            t = source.detach()
            if t.device is not CPU:
                t = t.cpu()
            target = buffer[start : start + nbytes].view(t._dtype.np).reshape(t._shape)
            np.copyto(target, host_array(t))
        else:  # a span of a shared storage, as raw bytes
            storage, low = source
            buffer[start : start + nbytes] = storage_bytes(storage)[low : low + nbytes]


def segment_prefix(parent_pid: int) -> str:
    """Names of segments made by the workers of ``parent_pid`` start with this (leak checks)."""
    return f"ember_{parent_pid}_"


def pack(obj):
    """A picklable message for ``obj``; its tensors' bytes go to a new shared-memory segment.

    The receiver must ``unpack`` (or ``discard``) the message, which unlinks the segment.
    """
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    pickler.dump(obj)
    if not pickler.tensors:
        return buf.getvalue(), None, (), ()
    regions, metas, size = _plan(pickler.tensors)
    segment = _shm.named(size, prefix=segment_prefix(os.getppid()), counted=False)
    try:
        view = np.frombuffer(segment.buffer(), np.uint8)
        _fill(view, regions)
    except BaseException:
        _shm.discard(segment.name)
        raise
    return buf.getvalue(), segment.name, [region[:2] for region in regions], metas


def unpack(message):
    """The object ``pack`` sent, its tensors viewing the shared segment without a copy."""
    payload, name, storages, metas = message
    tensors = []
    if name is not None:
        segment = _shm.take(name)
        runtime = backend_for("cpu").runtime
        base = segment.data
        made = [
            new_storage(CPU, nbytes, base + start, 0, base + start, segment, runtime)
            for start, nbytes in storages
        ]
        tensors = [_rebuild(made, *meta) for meta in metas]
    return _Unpickler(io.BytesIO(payload), tensors).load()


def _rebuild(storages, index, shape, stride, offset, dtype_name, requires_grad, cls, device):
    dtype = _dtype._by_name(dtype_name)
    if stride is None:
        stride = contiguous_strides(shape)
    t = make(storages[index], shape, stride, offset, dtype, is_contiguous(shape, stride))
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t if cls is None else t.as_subclass(cls)


def discard(message) -> None:
    """Free the segment of a message that will never be unpacked."""
    if message[1] is not None:
        _shm.discard(message[1])
