"""The ``cuda`` device through pycuda: the driver hooks of ``gpu.GpuRuntime``.

Each device is driven through its *primary* context (the one the CUDA runtime uses), so cuBLAS
and any other runtime-API library share allocations and streams with the kernels here. A thread
makes a device's context current on first use (``activate``); the current device and the current
stream of each device are per thread, as in PyTorch.

Memory comes from ``cuMemAlloc`` through ember's caching allocator (``cache_min_bytes = 0``):
``alloc`` turns the driver's out-of-memory error into MemoryError, so the allocator frees its cache
and retries before raising ``ember.cuda.OutOfMemoryError``. Copies from pageable host memory are
synchronous; from pinned memory (``host_alloc``) they may be asynchronous on the current stream.
"""

from __future__ import annotations

import atexit
import struct

from ember_backend_gpu.gpu import DeviceProperties, GpuRuntime

from . import compiler


class CudaRuntime(GpuRuntime):
    """The runtime contract of ember's backends (ember/dispatcher/hookspecs.py) for CUDA."""

    def __init__(self, driver, compile_module=compiler.compile_module):
        self.driver = driver
        self._compile = compile_module  # nvcc; the emulated driver's host build in its tests
        driver.init()
        count = driver.Device.count()
        if count == 0:
            raise RuntimeError("the CUDA driver loaded but found no devices")
        super().__init__(count)
        self._devices = [driver.Device(i) for i in range(count)]
        self._contexts: dict = {}
        self._props: dict = {}
        self.pinned_type = driver.PagelockedHostAllocation
        # ember.version.cuda: the CUDA version pycuda was built against, as torch.version.cuda.
        self.versions = {"cuda": ".".join(map(str, driver.get_version()[:2]))}
        atexit.register(self._shutdown)

    # ---- devices and contexts -------------------------------------------------------------
    def device_name(self, index=None) -> str:
        return self._devices[self.device_index(index)].name()

    def _context(self, index: int):
        ctx = self._contexts.get(index)
        if ctx is None:
            with self._lock:
                ctx = self._contexts.get(index)
                if ctx is None:
                    ctx = self._devices[index].retain_primary_context()
                    self._contexts[index] = ctx
        return ctx

    def activate(self, index) -> None:
        """Make device ``index``'s primary context current on this thread."""
        index = 0 if index is None else index
        local = self._local
        active = getattr(local, "active", None)
        if active == index:
            return
        if active is not None:
            self.driver.Context.pop()
        self._context(index).push()
        local.active = index

    def device_properties(self, index=None) -> DeviceProperties:
        index = self.device_index(index)
        found = self._props.get(index)
        if found is None:
            dev, attr = self._devices[index], self.driver.device_attribute
            major, minor = dev.compute_capability()
            found = DeviceProperties(
                name=dev.name(),
                major=major,
                minor=minor,
                total_memory=dev.total_memory(),
                multi_processor_count=dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
            )
            self._props[index] = found
        return found

    def mem_get_info(self, index=None) -> tuple[int, int]:
        self.activate(self.device_index(index))
        return self.driver.mem_get_info()

    def _sync(self, index) -> None:
        self.driver.Context.synchronize()

    # ---- memory ------------------------------------------------------------------------------
    def alloc(self, nbytes: int, index=None):
        self.activate(index)
        try:
            return self.driver.mem_alloc(max(int(nbytes), 1))
        except self.driver.MemoryError as exc:
            raise MemoryError(
                f"cuda:{index or 0}: cuMemAlloc of {nbytes} bytes failed: {exc}"
            ) from exc

    def free(self, handle, index=None) -> None:
        self.activate(index)
        handle.free()

    def address(self, handle) -> int:
        return int(handle)

    def ipc_handle(self, handle, index=None) -> bytes:
        """``cuIpcGetMemHandle`` of an allocation (a ``mem_alloc`` base, as the allocator's
        segments are): 64 bytes another process opens with ``open_ipc_handle``."""
        self.activate(index)
        return bytes(self.driver.mem_get_ipc_handle(int(handle)))

    def open_ipc_handle(self, data: bytes, index=None):
        """``cuIpcOpenMemHandle`` (peer access enabled lazily); closed when collected."""
        self.activate(index)
        return self.driver.IPCMemoryHandle(bytearray(data))

    def _copy(self, kind: str, dst, src, nbytes: int, stream) -> None:
        """One copy; ``stream`` False: synchronous (pageable host memory), else asynchronous
        on that native stream (None: the default stream)."""
        driver = self.driver
        if kind == "dtod":
            driver.memcpy_dtod_async(dst, src, nbytes, stream)
        elif stream is False:
            (driver.memcpy_htod if kind == "htod" else driver.memcpy_dtoh)(dst, src)
        else:
            (driver.memcpy_htod_async if kind == "htod" else driver.memcpy_dtoh_async)(
                dst, src, stream
            )

    def memset(self, index, address: int, nbytes: int) -> None:
        """Zero ``nbytes`` at ``address`` on the current stream."""
        self.activate(index)
        self.driver.memset_d8_async(address, 0, nbytes, self._native_stream(index))

    def read(self, index, host, address: int) -> None:
        """Device bytes at ``address`` into the host array ``host`` (waits for queued work)."""
        self.activate(index)
        self.driver.memcpy_dtoh(host, address)

    def host_alloc(self, nbytes: int):
        """Page-locked host memory: a numpy uint8 array (its base owns the pinned pages)."""
        import numpy as np

        self.activate(self.current_device())
        return self.driver.pagelocked_empty(max(int(nbytes), 1), np.uint8)

    # ---- kernels and streams -----------------------------------------------------------------
    def _load_module(self, index: int, module_name: str):
        major, minor = self.device_capability(index)
        binary = self._compile(self.module_source(module_name), f"sm_{major}{minor}")
        self.activate(index)
        return self.driver.module_from_buffer(binary)

    def _get_function(self, module, kernel: str, arg_format: str):
        return module.get_function(kernel), struct.Struct(arg_format)

    def _call(self, function, grid, block, stream, args, shared: int) -> None:
        # pycuda's prepared_async_call, less what a launch here does not need: it sets the
        # block shape through the pre-CUDA-4 cuFuncSetBlockShape (a second driver call per
        # launch), re-reads its keyword arguments, imports its packer and walks the texture
        # references; its own last step is this ``_launch_kernel`` (cuLaunchKernel with the
        # packed parameter buffer), here with the format's Struct compiled once.
        kernel, packer = function
        kernel._launch_kernel(grid, block, packer.pack(*args), shared, stream)

    def make_blas(self):
        """cuBLAS bound to this runtime (OSError/ImportError: the glue falls back to its own
        GEMM kernel with a warning)."""
        from .cublas import Cublas

        return Cublas(self)

    def make_solver(self):
        """cuSOLVER bound to this runtime, for ember.linalg (OSError/ImportError: those ops run
        through the CPU fallback, with a warning)."""
        from .cusolver import Cusolver

        return Cusolver(self)

    def make_fft(self):
        """cuFFT bound to this runtime, for ember.fft (OSError/ImportError: those ops run
        through the CPU fallback, with a warning)."""
        from .cufft import Cufft

        return Cufft(self)

    def new_native_stream(self, index):
        return self.driver.Stream()

    def new_native_event(self, enable_timing: bool, blocking: bool):
        flags = self.driver.event_flags
        value = 0 if enable_timing else flags.DISABLE_TIMING
        return self.driver.Event(value | (flags.BLOCKING_SYNC if blocking else 0))

    # ---- shutdown ----------------------------------------------------------------------------
    def _shutdown(self) -> None:
        """Leave no context pushed at exit (pycuda warns about a non-empty context stack)."""
        try:
            if getattr(self._local, "active", None) is not None:
                self.driver.Context.pop()
                self._local.active = None
        except Exception:
            pass
