"""The ``cuda`` device on AMD GPUs: the HIP driver hooks of ``ember_backend_gpu.gpu.GpuRuntime``.

Everything above the hooks (device indices, per-thread current device and streams, the kernel
cache per device, launches, the status word, scratch, copies, streams and events) is the shared
runtime the CUDA backend and the CPU emulator run, so the emulator's tests cover it. HIP keeps
one current device per thread (``hipSetDevice``) instead of CUDA's context stack. Memory comes
from ``hipMalloc`` through ember's caching allocator; its out-of-memory error becomes MemoryError
so the allocator frees its cache and retries. Kernel arguments are packed as pycuda packs them
(``struct`` with native alignment, the argument formats of ``codegen``) and handed to
``hipModuleLaunchKernel`` as one buffer.
"""

from __future__ import annotations

import os
import struct

import numpy as np
from ember_backend_gpu.gpu import DeviceProperties, GpuRuntime

from . import compiler, hip
from .native import HipEvent, HipStream, IpcMapping, PinnedBuffer


class HipRuntime(GpuRuntime):
    """The runtime contract of ember's backends (ember/dispatcher/hookspecs.py) for HIP."""

    target = "hip"
    pinned_type = PinnedBuffer

    def __init__(self, library: hip.Hip):
        self.hip = library
        self.ffi, self.lib = library.ffi, library.lib
        count = library.device_count()
        if count == 0:
            raise RuntimeError(
                f"the HIP runtime ({library.path}, HIP {library.version()}) found no AMD GPU"
            )
        super().__init__(count)
        self.versions = {"hip": library.version()}
        self._props: dict = {}

    def check(self, status: int, what: str) -> None:
        self.hip.check(status, what)

    # ---- devices -----------------------------------------------------------------------------
    def activate(self, index) -> None:
        index = 0 if index is None else index
        if getattr(self._local, "active", None) != index:
            self.check(self.lib.hipSetDevice(index), "hipSetDevice")
            self._local.active = index

    def device_name(self, index=None) -> str:
        return self.device_properties(index).name

    def device_properties(self, index=None) -> DeviceProperties:
        index = self.device_index(index)
        found = self._props.get(index)
        if found is None:
            ffi, lib = self.ffi, self.lib
            name = ffi.new("char[256]")
            self.check(lib.hipDeviceGetName(name, 256, index), "hipDeviceGetName")
            total = ffi.new("size_t *")
            self.check(lib.hipDeviceTotalMem(total, index), "hipDeviceTotalMem")
            values = {}
            for key, attribute in hip.ATTRIBUTE.items():
                box = ffi.new("int *")
                self.check(
                    lib.hipDeviceGetAttribute(box, attribute, index), "hipDeviceGetAttribute"
                )
                values[key] = box[0]
            found = DeviceProperties(
                name=ffi.string(name).decode(),
                total_memory=total[0],
                gcnArchName=self._arch(index),
                **values,
            )
            self._props[index] = found
        return found

    def _arch(self, index: int) -> str:
        """The target ID hiprtc compiles for, e.g. "gfx90a:sramecc+:xnack-"."""
        explicit = os.environ.get("EMBER_ROCM_ARCH")
        if explicit:
            return explicit
        props = self.ffi.new("char[]", hip.PROPS_BYTES)
        self.check(self.lib.hipGetDeviceProperties(props, index), "hipGetDeviceProperties")
        arch = self.ffi.string(props + hip.ARCH_OFFSET, 256).decode(errors="replace")
        if not arch.startswith("gfx"):
            raise RuntimeError(
                f"cuda:{index}: could not read the GPU architecture from hipGetDeviceProperties "
                f"(got {arch!r}); set EMBER_ROCM_ARCH, e.g. EMBER_ROCM_ARCH=gfx90a"
            )
        return arch

    def mem_get_info(self, index=None) -> tuple[int, int]:
        self.activate(self.device_index(index))
        free, total = self.ffi.new("size_t *"), self.ffi.new("size_t *")
        self.check(self.lib.hipMemGetInfo(free, total), "hipMemGetInfo")
        return free[0], total[0]

    def _sync(self, index) -> None:
        self.check(self.lib.hipDeviceSynchronize(), "hipDeviceSynchronize")

    # ---- memory ------------------------------------------------------------------------------
    def alloc(self, nbytes: int, index=None):
        self.activate(index)
        box = self.ffi.new("void **")
        status = self.lib.hipMalloc(box, max(int(nbytes), 1))
        if status == hip.OUT_OF_MEMORY:
            raise MemoryError(f"cuda:{index or 0}: hipMalloc of {nbytes} bytes failed")
        self.check(status, "hipMalloc")
        return int(self.ffi.cast("uintptr_t", box[0]))

    def free(self, handle, index=None) -> None:
        self.activate(index)
        self.check(self.lib.hipFree(self.ffi.cast("void *", handle)), "hipFree")

    def address(self, handle) -> int:
        return int(handle)

    def ipc_handle(self, handle, index=None) -> bytes:
        """``hipIpcGetMemHandle`` of an allocation (a ``hipMalloc`` base, as the allocator's
        segments are): 64 bytes another process opens with ``open_ipc_handle``."""
        self.activate(index)
        box = self.ffi.new("hipIpcMemHandle_t *")
        status = self.lib.hipIpcGetMemHandle(box, self.ffi.cast("void *", handle))
        self.check(status, "hipIpcGetMemHandle")
        return bytes(self.ffi.buffer(box))

    def open_ipc_handle(self, data: bytes, index=None) -> IpcMapping:
        self.activate(index)
        return IpcMapping(self, data, index)

    def _pointer(self, place):
        """A void* for a device address (int) or a host numpy array."""
        if isinstance(place, np.ndarray):
            return self.ffi.cast("void *", place.ctypes.data)
        return self.ffi.cast("void *", place)

    def _copy(self, kind: str, dst, src, nbytes: int, stream) -> None:
        """One copy; ``stream`` False: synchronous, else asynchronous on that native stream."""
        dst, src = self._pointer(dst), self._pointer(src)
        if stream is False:
            self.check(self.lib.hipMemcpy(dst, src, nbytes, hip.MEMCPY[kind]), "hipMemcpy")
        else:
            native = self.ffi.NULL if stream is None else stream.stream
            status = self.lib.hipMemcpyAsync(dst, src, nbytes, hip.MEMCPY[kind], native)
            self.check(status, "hipMemcpyAsync")

    def memset(self, index, address: int, nbytes: int) -> None:
        self.activate(index)
        stream = self._native_stream(index)
        native = self.ffi.NULL if stream is None else stream.stream
        status = self.lib.hipMemsetAsync(self.ffi.cast("void *", address), 0, nbytes, native)
        self.check(status, "hipMemsetAsync")

    def read(self, index, host, address: int) -> None:
        self.activate(index)
        self._copy("dtoh", host, address, host.nbytes, False)

    def host_alloc(self, nbytes: int):
        """Page-locked host memory: a numpy uint8 array whose base owns the pinned pages."""
        self.activate(self.current_device())
        return np.asarray(PinnedBuffer(self, max(int(nbytes), 1)))

    # ---- kernels and streams -----------------------------------------------------------------
    def _load_module(self, index: int, module_name: str):
        arch = self.device_properties(index).gcnArchName
        binary = compiler.compile_module(self.hip, self.module_source(module_name), arch)
        self.activate(index)
        box = self.ffi.new("hipModule_t *")
        self.check(self.lib.hipModuleLoadData(box, binary), f"hipModuleLoadData({module_name})")
        return box[0]

    def _get_function(self, module, kernel: str, arg_format: str):
        box = self.ffi.new("hipFunction_t *")
        status = self.lib.hipModuleGetFunction(box, module, kernel.encode())
        self.check(status, f"hipModuleGetFunction({kernel})")
        return box[0], arg_format

    def _call(self, function, grid, block, stream, args, shared: int) -> None:
        native, arg_format = function
        packed = struct.pack(arg_format, *args)
        packed += bytes(-len(packed) % 8)
        ffi = self.ffi
        buffer = ffi.from_buffer(packed)
        size = ffi.new("size_t *", len(packed))
        extra = ffi.new("void *[]", [
            ffi.cast("void *", hip.LAUNCH_BUFFER_POINTER), ffi.cast("void *", buffer),
            ffi.cast("void *", hip.LAUNCH_BUFFER_SIZE), ffi.cast("void *", size),
            ffi.cast("void *", hip.LAUNCH_END),
        ])  # fmt: skip
        status = self.lib.hipModuleLaunchKernel(
            native, *grid, *block, shared,
            ffi.NULL if stream is None else stream.stream, ffi.NULL, extra,
        )  # fmt: skip
        self.check(status, "hipModuleLaunchKernel")

    def make_blas(self):
        """rocBLAS bound to this runtime (OSError: the glue uses ember's own GEMM kernel and
        warns once)."""
        from .rocblas import Rocblas

        return Rocblas(self)

    def new_native_stream(self, index):
        return HipStream(self)

    def new_native_event(self, enable_timing: bool, blocking: bool):
        return HipEvent(self, enable_timing, blocking)
