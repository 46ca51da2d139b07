"""``ember.cuda.Stream`` and ``ember.cuda.Event`` (PyTorch's classes) over a driver's streams.

The classes are made per runtime (``make_classes``) so they can reach its devices and current
streams without a global. A Stream with ``handle`` 0 is the device's legacy default stream.
Native objects come from ``runtime.new_native_stream(index)`` and
``runtime.new_native_event(enable_timing, blocking)`` and have pycuda's method names: streams
``handle``, ``is_done()``, ``synchronize()``, ``wait_for_event(event)``; events
``record(stream or None)``, ``query()``, ``synchronize()``, ``time_since(start)`` (ms). A HIP
driver wraps its handles in objects with those names, and the emulator has host ones.
"""

from __future__ import annotations

import contextlib


def make_classes(runtime):
    """``(Stream, Event)`` bound to ``runtime`` (a gpu.GpuRuntime)."""

    class Stream:
        """A CUDA stream: kernels and copies issued while it is current run on it in order.

        Args:
            device: the device (index, ``"cuda:1"``, or None for the current one).
            priority: accepted for compatibility (streams are created with default priority).
        """

        def __init__(self, device=None, priority: int = 0, _native=None, _index=None):
            index = runtime.device_index(device) if _index is None else _index
            self.device_index = index
            self.priority = priority
            if _native is None and _index is None:
                runtime.activate(index)
                _native = runtime.new_native_stream(index)
            self.native = _native  # None for the default stream

        @property
        def device(self):
            return f"cuda:{self.device_index}"

        @property
        def cuda_stream(self) -> int:
            return 0 if self.native is None else int(self.native.handle)

        def query(self) -> bool:
            """Whether all work queued on the stream has finished."""
            runtime.activate(self.device_index)
            if self.native is None:
                event = runtime.new_native_event(False, False)
                event.record(None)
                return event.query()
            return self.native.is_done()

        def synchronize(self) -> None:
            if self.native is None:
                runtime.synchronize(self.device_index)
            else:
                runtime.activate(self.device_index)
                self.native.synchronize()

        def wait_event(self, event) -> None:
            """Make future work on this stream wait for ``event``."""
            runtime.activate(self.device_index)
            if self.native is None:
                event.synchronize()  # the legacy stream cannot wait on the device side here
            else:
                self.native.wait_for_event(event.native)

        def wait_stream(self, stream) -> None:
            self.wait_event(stream.record_event())

        def record_event(self, event=None):
            event = event or Event()
            event.record(self)
            return event

        def __eq__(self, other) -> bool:
            return (
                isinstance(other, Stream)
                and other.device_index == self.device_index
                and other.cuda_stream == self.cuda_stream
            )

        def __hash__(self) -> int:
            return hash((self.device_index, self.cuda_stream))

        def __enter__(self):
            self._context = runtime.stream_context(self)
            return self._context.__enter__()

        def __exit__(self, *exc):
            return self._context.__exit__(*exc)

        def __repr__(self) -> str:
            return f"<ember.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"

    class Event:
        """A marker in a stream: wait for it, or time the work between two of them.

        Args:
            enable_timing: record timestamps, for ``elapsed_time``.
            blocking: ``synchronize`` sleeps instead of spinning.
            interprocess: accepted for compatibility.
        """

        def __init__(
            self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
        ):
            self.enable_timing = enable_timing
            self.blocking = blocking
            self.native = None
            self.device_index = None

        def record(self, stream=None) -> None:
            stream = stream or runtime.current_stream(runtime.current_device())
            runtime.activate(stream.device_index)
            if self.native is None:
                self.native = runtime.new_native_event(self.enable_timing, self.blocking)
                self.device_index = stream.device_index
            self.native.record(stream.native)

        def wait(self, stream=None) -> None:
            stream = stream or runtime.current_stream(runtime.current_device())
            stream.wait_event(self)

        def query(self) -> bool:
            return True if self.native is None else self.native.query()

        def synchronize(self) -> None:
            if self.native is not None:
                self.native.synchronize()

        def elapsed_time(self, end_event) -> float:
            """Milliseconds from this event to ``end_event`` (both recorded, with timing)."""
            if not (self.enable_timing and end_event.enable_timing):
                raise RuntimeError("Both events must be created with enable_timing=True")
            if self.native is None or end_event.native is None:
                raise RuntimeError("Both events must be recorded before calculating elapsed time")
            end_event.synchronize()
            return end_event.native.time_since(self.native)

        def __repr__(self) -> str:
            state = "unrecorded" if self.native is None else f"cuda:{self.device_index}"
            return f"<ember.cuda.Event {state}>"

    return Stream, Event


@contextlib.contextmanager
def stream_context(runtime, stream):
    """Make ``stream`` (and its device) current inside the block, as ``torch.cuda.stream``."""
    previous_device = runtime.current_device()
    index = stream.device_index
    previous = runtime.current_stream(index)
    runtime.set_device(index)
    runtime.set_stream(stream)
    try:
        yield stream
    finally:
        runtime.set_stream(previous)
        runtime.set_device(previous_device)
