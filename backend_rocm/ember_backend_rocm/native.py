"""HIP streams, events and pinned host memory as the objects ``ember_backend_gpu`` expects:
streams and events with pycuda's method names (see ember_backend_gpu/streams.py), pinned memory
as an owner object numpy arrays point into (``GpuRuntime.is_pinned`` follows ``.base`` to it)."""

from __future__ import annotations

import contextlib

from . import hip


class HipStream:
    """A ``hipStream_t``: ``handle``, ``is_done()``, ``synchronize()``, ``wait_for_event(e)``."""

    def __init__(self, runtime):
        self.runtime = runtime
        box = runtime.ffi.new("hipStream_t *")
        runtime.check(runtime.lib.hipStreamCreate(box), "hipStreamCreate")
        self.stream = box[0]

    @property
    def handle(self) -> int:
        return int(self.runtime.ffi.cast("uintptr_t", self.stream))

    def is_done(self) -> bool:
        status = self.runtime.lib.hipStreamQuery(self.stream)
        if status == hip.NOT_READY:
            return False
        self.runtime.check(status, "hipStreamQuery")
        return True

    def synchronize(self) -> None:
        self.runtime.check(
            self.runtime.lib.hipStreamSynchronize(self.stream), "hipStreamSynchronize"
        )

    def wait_for_event(self, event) -> None:
        status = self.runtime.lib.hipStreamWaitEvent(self.stream, event.event, 0)
        self.runtime.check(status, "hipStreamWaitEvent")

    def __del__(self):
        with contextlib.suppress(Exception):  # at interpreter exit the library may be gone
            self.runtime.lib.hipStreamDestroy(self.stream)


class HipEvent:
    """A ``hipEvent_t``: ``record(stream)``, ``query()``, ``synchronize()``, ``time_since(e)``."""

    def __init__(self, runtime, enable_timing: bool, blocking: bool):
        self.runtime = runtime
        flags = (0 if enable_timing else hip.EVENT_DISABLE_TIMING) | (
            hip.EVENT_BLOCKING_SYNC if blocking else 0
        )
        box = runtime.ffi.new("hipEvent_t *")
        runtime.check(runtime.lib.hipEventCreateWithFlags(box, flags), "hipEventCreateWithFlags")
        self.event = box[0]

    def record(self, stream) -> None:
        native = self.runtime.ffi.NULL if stream is None else stream.stream
        self.runtime.check(self.runtime.lib.hipEventRecord(self.event, native), "hipEventRecord")

    def query(self) -> bool:
        status = self.runtime.lib.hipEventQuery(self.event)
        if status == hip.NOT_READY:
            return False
        self.runtime.check(status, "hipEventQuery")
        return True

    def synchronize(self) -> None:
        self.runtime.check(self.runtime.lib.hipEventSynchronize(self.event), "hipEventSynchronize")

    def time_since(self, start) -> float:
        """Milliseconds from ``start`` to this event."""
        box = self.runtime.ffi.new("float *")
        status = self.runtime.lib.hipEventElapsedTime(box, start.event, self.event)
        self.runtime.check(status, "hipEventElapsedTime")
        return float(box[0])

    def __del__(self):
        with contextlib.suppress(Exception):  # at interpreter exit the library may be gone
            self.runtime.lib.hipEventDestroy(self.event)


class PinnedBuffer:
    """``nbytes`` of page-locked host memory from ``hipHostMalloc``, freed with its last view
    (numpy keeps this owner alive as the ``base`` of arrays made from it)."""

    def __init__(self, runtime, nbytes: int):
        self.runtime = runtime
        box = runtime.ffi.new("void **")
        runtime.check(runtime.lib.hipHostMalloc(box, nbytes, 0), "hipHostMalloc")
        self.pointer = box[0]
        address = int(runtime.ffi.cast("uintptr_t", self.pointer))
        self.__array_interface__ = {
            "data": (address, False),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }

    def __del__(self):
        with contextlib.suppress(Exception):  # at interpreter exit the library may be gone
            self.runtime.lib.hipHostFree(self.pointer)


class IpcMapping:
    """Another process's allocation opened from its IPC handle (``hipIpcOpenMemHandle``);
    ``int()`` of it is the device address here, closed with its last user."""

    def __init__(self, runtime, data: bytes, index: int):
        ffi = runtime.ffi
        if len(data) != hip.IPC_HANDLE_SIZE:
            raise ValueError(f"a HIP IPC handle has {hip.IPC_HANDLE_SIZE} bytes, not {len(data)}")
        value = ffi.new("hipIpcMemHandle_t *")
        ffi.memmove(value, data, len(data))
        box = ffi.new("void **")
        flags = hip.IPC_LAZY_ENABLE_PEER_ACCESS
        runtime.check(runtime.lib.hipIpcOpenMemHandle(box, value[0], flags), "hipIpcOpenMemHandle")
        self.runtime, self.index, self.pointer = runtime, index, box[0]

    def __int__(self) -> int:
        return int(self.runtime.ffi.cast("uintptr_t", self.pointer))

    def __del__(self):
        with contextlib.suppress(Exception):  # at interpreter exit the library may be gone
            self.runtime.activate(self.index)
            self.runtime.lib.hipIpcCloseMemHandle(self.pointer)
