"""The ``cuda`` device through pycuda: contexts, memory, copies, kernel launches, streams.

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
import threading
import types

from . import codegen, compiler, launch
from .streams import make_classes, stream_context


class DeviceProperties(types.SimpleNamespace):
    """``ember.cuda.get_device_properties``: name, major, minor, total_memory,
    multi_processor_count."""

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


class CudaRuntime:
    """The runtime contract of ember's backends (ember/dispatcher/hookspecs.py) for CUDA."""

    device_type = "cuda"
    host_memory = False
    cache_min_bytes = 0  # everything goes through ember's caching allocator

    def __init__(self, driver):
        self.driver = driver
        driver.init()
        self._count = driver.Device.count()
        if self._count == 0:
            raise RuntimeError("the CUDA driver loaded but found no devices")
        self._devices = [driver.Device(i) for i in range(self._count)]
        self._contexts: dict = {}
        self._local = threading.local()
        self._lock = threading.RLock()
        self._functions: dict = {}  # (device, kernel name) -> prepared pycuda Function
        self._modules: dict = {}  # (device, module name) -> pycuda Module (kept alive)
        self._status: dict = {}  # device -> 4-byte status word
        self._scratch: dict = {}  # (device, stream handle) -> allocation
        self._props: dict = {}
        self._default_streams: dict = {}
        self.flags: dict = {}  # ember.backends.cuda flags (the core replaces this dict)
        self.Stream, self.Event = make_classes(self)
        atexit.register(self._shutdown)

    # ---- devices and contexts -------------------------------------------------------------
    def device_count(self) -> int:
        return self._count

    def device_name(self, index=None) -> str:
        return self._devices[self.device_index(index)].name()

    def device_index(self, device=None) -> int:
        if device is None:
            return self.current_device()
        if isinstance(device, int):
            index = device
        else:
            index = getattr(device, "index", None)
            if index is None and isinstance(device, str):
                _, _, tail = device.partition(":")
                index = int(tail) if tail else None
            if index is None:
                index = self.current_device()
        if not 0 <= index < self._count:
            raise RuntimeError(f"cuda:{index} is not available: {self._count} CUDA device(s)")
        return index

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

    def current_device(self) -> int:
        return getattr(self._local, "device", 0)

    def set_device(self, index: int) -> None:
        index = self.device_index(index)
        self._local.device = index
        self.activate(index)

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

    def device_capability(self, index=None) -> tuple[int, int]:
        props = self.device_properties(index)
        return props.major, props.minor

    def sm_count(self, index) -> int:
        return self.device_properties(index).multi_processor_count

    def mem_get_info(self, index=None) -> tuple[int, int]:
        self.activate(self.device_index(index))
        return self.driver.mem_get_info()

    def synchronize(self, index=None) -> None:
        self.activate(self.device_index(index))
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

    def copy_in(self, handle, byte_offset: int, src, index=None, non_blocking=False) -> None:
        """Host bytes (a contiguous buffer) -> device; asynchronous only from pinned memory."""
        self.activate(index)
        dst = int(handle) + byte_offset
        if non_blocking and self.is_pinned(src):
            self.driver.memcpy_htod_async(dst, src, self._native_stream(index))
        else:
            self.driver.memcpy_htod(dst, src)

    def copy_out(self, dst, handle, byte_offset: int, index=None, non_blocking=False) -> None:
        """Device -> host bytes; the legacy stream orders it after all queued work."""
        self.activate(index)
        src = int(handle) + byte_offset
        if non_blocking and self.is_pinned(dst):
            self.driver.memcpy_dtoh_async(dst, src, self._native_stream(index))
        else:
            self.driver.memcpy_dtoh(dst, src)

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        self.activate(index)
        self.driver.memcpy_dtod_async(
            int(dst) + dst_offset, int(src) + src_offset, nbytes, self._native_stream(index)
        )

    def memcpy(self, index, dst: int, src: int, nbytes: int) -> None:
        """Device-to-device bytes on the current stream."""
        self.activate(index)
        self.driver.memcpy_dtod_async(dst, src, nbytes, self._native_stream(index))

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

    def is_pinned(self, array) -> bool:
        """Whether a numpy array lives in page-locked memory from ``host_alloc``."""
        pinned = self.driver.PagelockedHostAllocation
        base = array
        while base is not None:
            if isinstance(base, pinned):
                return True
            base = getattr(base, "base", None)
        return False

    def scratch(self, index, nbytes: int) -> int:
        """Device scratch space of at least ``nbytes`` for the current stream, reused by later
        calls on that stream (which the stream orders after this one's kernels)."""
        key = (index, self.current_stream(index).cuda_stream)
        found = self._scratch.get(key)
        if found is None or found.size < nbytes:
            if found is not None:
                self.synchronize(index)  # the old buffer may still be read by queued kernels
                found.free()
            self.activate(index)
            size = max(nbytes, 1 << 20)
            allocation = self.driver.mem_alloc(size)
            found = types.SimpleNamespace(allocation=allocation, size=size, free=allocation.free)
            self._scratch[key] = found
        return int(found.allocation)

    # ---- kernels -----------------------------------------------------------------------------
    def function(self, index: int, kernel: str):
        """The prepared pycuda function of ``kernel`` on device ``index`` (compiled once)."""
        key = (index, kernel)
        found = self._functions.get(key)
        if found is None:
            with self._lock:
                module_name = codegen.module_of(kernel)
                module = self._modules.get((index, module_name))
                if module is None:
                    major, minor = self.device_capability(index)
                    binary = compiler.compile_module(
                        codegen.source(module_name, "cuda"), f"sm_{major}{minor}"
                    )
                    self.activate(index)
                    module = self.driver.module_from_buffer(binary)
                    self._modules[(index, module_name)] = module
                found = module.get_function(kernel)
                found.prepare(codegen.arg_format(kernel))
                self._functions[key] = found
        return found

    def launch(self, index, kernel: str, grid, block, *args, shared: int = 0) -> None:
        """Run ``kernel`` on the current stream of device ``index``."""
        index = 0 if index is None else index
        function = self.function(index, kernel)
        self.activate(index)
        grid = grid if isinstance(grid, tuple) else (grid, 1)
        block = block if isinstance(block, tuple) else (block, 1, 1)
        function.prepared_async_call(
            grid, block, self._native_stream(index), *args, shared_size=shared
        )

    def launch_1d(self, index, kernel: str, n: int, *args) -> None:
        """A grid-stride kernel over ``n`` items."""
        blocks = launch.grid(n, self.sm_count(index or 0))
        self.launch(index, kernel, blocks, launch.BLOCK, *args)

    def status_word(self, index) -> int:
        """Address of the device's status word (kernels store EM_* codes there)."""
        found = self._status.get(index)
        if found is None:
            self.activate(index)
            found = self.driver.mem_alloc(4)
            self.driver.memset_d32(found, 0, 1)
            self._status[index] = found
        return int(found)

    def read_status(self, index) -> int:
        """The status word (waits for queued work), reset to 0 when it was set."""
        import numpy as np

        self.status_word(index)
        host = np.zeros(1, np.int32)
        self.driver.memcpy_dtoh(host, self._status[index])
        if host[0]:
            self.driver.memset_d32(self._status[index], 0, 1)
        return int(host[0])

    # ---- streams -----------------------------------------------------------------------------
    def default_stream(self, index=None):
        index = self.device_index(index)
        found = self._default_streams.get(index)
        if found is None:
            found = self.Stream(_native=None, _index=index)
            self._default_streams[index] = found
        return found

    def current_stream(self, index=None):
        index = self.device_index(index)
        streams = getattr(self._local, "streams", None)
        found = streams.get(index) if streams else None
        return found if found is not None else self.default_stream(index)

    def set_stream(self, stream) -> None:
        streams = getattr(self._local, "streams", None)
        if streams is None:
            streams = self._local.streams = {}
        streams[stream.device_index] = stream

    def stream_context(self, stream):
        return stream_context(self, stream)

    def _native_stream(self, index):
        streams = getattr(self._local, "streams", None)
        if not streams:
            return None
        found = streams.get(0 if index is None else index)
        return None if found is None else found.native

    # ---- shutdown ----------------------------------------------------------------------------
    def _shutdown(self) -> None:
        """Leave no context pushed at exit (pycuda warns about a non-empty context stack)."""
        try:
            if getattr(self._local, "active", None) is not None:
                self.driver.Context.pop()
                self._local.active = None
        except Exception:
            pass
