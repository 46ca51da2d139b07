"""Native libraries opened at run time with cffi's ABI mode (no headers, nothing compiled), as the
GPU backends open their driver and BLAS: ``open_library`` tries candidates in order, and
``BlasHandles`` is what the cuBLAS and rocBLAS bindings share (one handle per device, created with
the device active and re-bound when the device's current stream changes; the 1 and 0 scalars of
``C = 1 * op(A) op(B) + 0 * C``)."""

from __future__ import annotations


def open_library(cdef: str, candidates: list[str], what: str, fix: str):
    """``(ffi, lib, path)`` of the first candidate that opens, or OSError naming the fix."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef(cdef)
    errors = []
    for path in candidates:
        try:
            return ffi, ffi.dlopen(path), path
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    raise OSError(f"{what} did not load ({'; '.join(errors) or 'not found'}). {fix}")


class BlasHandles:
    """Per-device handles of a BLAS library opened as ``self.ffi``/``self.lib``."""

    NAME = "BLAS"
    HANDLE_TYPE = "void *"  # the cffi type of a handle (declared by the subclass's cdef)
    STREAM_TYPE = "void *"
    CREATE = ""  # int create(handle *)
    SET_STREAM = ""  # int set_stream(handle, stream)
    STATUS: dict = {}

    def __init__(self, runtime, ffi, lib):
        self.runtime, self.ffi, self.lib = runtime, ffi, lib
        self._handles: dict = {}
        self._streams: dict = {}
        self._scalars = {
            "float32": (ffi.new("float *", 1.0), ffi.new("float *", 0.0)),
            "float64": (ffi.new("double *", 1.0), ffi.new("double *", 0.0)),
        }

    def _check(self, status: int, what: str) -> None:
        if status:
            raise RuntimeError(f"{self.NAME} {what} failed: {self.STATUS.get(status, status)}")

    def handle(self, index: int):
        """The device's handle, bound to its current stream."""
        handle = self._handles.get(index)
        self.runtime.activate(index)
        if handle is None:
            box = self.ffi.new(f"{self.HANDLE_TYPE} *")
            self._check(getattr(self.lib, self.CREATE)(box), self.CREATE)
            handle = self._handles[index] = box[0]
        stream = self.runtime.current_stream(index).cuda_stream
        if self._streams.get(index) != stream:
            native = self.ffi.cast(self.STREAM_TYPE, stream)
            self._check(getattr(self.lib, self.SET_STREAM)(handle, native), self.SET_STREAM)
            self._streams[index] = stream
        return handle
