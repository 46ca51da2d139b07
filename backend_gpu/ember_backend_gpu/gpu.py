"""The driver-independent half of a GPU runtime: shared by CUDA (pycuda), ROCm (HIP via cffi)
and the CPU emulator the tests use.

``GpuRuntime`` holds what does not depend on the driver API: device-index resolution, the
per-thread current device and current stream of each device, the per-device kernel cache
(source from ``codegen``, binary from the subclass's compiler, loaded once per device), launch
geometry, the status word kernels report errors in, per-stream scratch space, pinned-memory
checks and the copy entry points of the runtime contract. A subclass supplies the driver in a
few hooks (``activate``, ``alloc``/``free``/``address``, ``_copy``, ``memset``/``read``,
``_load_module``/``_get_function``/``_call``, ``new_native_stream``/``new_native_event``,
``_sync``); its native stream and event objects follow pycuda's method names (see streams.py).
No pycuda and no device here, so the emulator's runs test this code as the GPUs run it.
"""

from __future__ import annotations

import threading
import types

import numpy as np

from . import codegen, launch
from .streams import make_classes, stream_context


def owned_by(array, owner_type) -> bool:
    """Whether ``array``'s memory belongs to an ``owner_type`` object (following numpy bases and
    memoryviews, as views of pinned buffers nest)."""
    base = array
    while base is not None:
        if isinstance(base, owner_type):
            return True
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return False


def _dim3(value) -> tuple:
    """A launch dimension (a number or a tuple of up to 3) as (x, y, z)."""
    return (*(value if isinstance(value, tuple) else (value,)), 1, 1)[:3]


FLAT_BLOCK = (launch.BLOCK, 1, 1)


class DeviceProperties(types.SimpleNamespace):
    """``ember.cuda.get_device_properties``: name, major, minor, total_memory,
    multi_processor_count."""

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, "
            f"multi_processor_count={self.multi_processor_count})"
        )


class GpuRuntime:
    """The backend runtime contract (ember/dispatcher/hookspecs.py) over a driver's hooks."""

    device_type = "cuda"
    host_memory = False
    cache_min_bytes = 0  # everything goes through ember's caching allocator
    target = "cuda"  # the codegen dialect of this runtime's kernel sources
    pinned_type: type = type(None)  # the owner class of host_alloc's arrays

    def __init__(self, count: int):
        self._count = count
        self._local = threading.local()
        self._lock = threading.RLock()
        self._functions: dict = {}  # (device, kernel name) -> launchable function
        self._modules: dict = {}  # (device, module name) -> loaded module (kept alive)
        self._bodies: dict = {}  # generated module name -> its text (fused kernels)
        self._status: dict = {}  # device -> address of its 4-byte status word
        self._status_allocations: dict = {}  # device -> the status word's allocation
        self._scratch: dict = {}  # (device, stream handle) -> (allocation, size)
        self._default_streams: dict = {}
        self._sm_counts: dict = {}  # device -> multiprocessor count (launch geometry)
        self.flags: dict = {}  # ember.backends.<type> switches (the core replaces this dict)
        self.launches = 0  # kernel launches issued, for tests and profiling
        self.Stream, self.Event = make_classes(self)

    # ---- devices -----------------------------------------------------------------------------
    def device_count(self) -> int:
        return self._count

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
            raise RuntimeError(
                f"{self.device_type}:{index} is not available: {self._count} device(s)"
            )
        return index

    def current_device(self) -> int:
        return getattr(self._local, "device", 0)

    def set_device(self, index) -> None:
        index = self.device_index(index)
        self._local.device = index
        self.activate(index)

    def device_capability(self, index=None) -> tuple[int, int]:
        props = self.device_properties(index)
        return props.major, props.minor

    def sm_count(self, index) -> int:
        """Multiprocessors of device ``index``: cached, as every grid-stride launch asks."""
        found = self._sm_counts.get(index)
        if found is None:
            found = self._sm_counts[index] = self.device_properties(index).multi_processor_count
        return found

    def synchronize(self, index=None) -> None:
        index = self.device_index(index)
        self.activate(index)
        self._sync(index)

    # ---- copies (the contract's entry points; ``_copy`` is the driver's) ----------------------
    def copy_in(self, handle, byte_offset: int, src, index=None, non_blocking=False) -> None:
        """Host bytes (flat uint8) -> device; asynchronous only from pinned memory."""
        self.activate(index)
        stream = self._async_stream(index, src, non_blocking)
        self._copy("htod", self.address(handle) + byte_offset, src, src.size, stream)

    def copy_out(self, dst, handle, byte_offset: int, index=None, non_blocking=False) -> None:
        """Device -> host bytes; synchronous unless ``dst`` is pinned and ``non_blocking``."""
        self.activate(index)
        stream = self._async_stream(index, dst, non_blocking)
        self._copy("dtoh", dst, self.address(handle) + byte_offset, dst.size, stream)

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        self.memcpy(index, self.address(dst) + dst_offset, self.address(src) + src_offset, nbytes)

    def memcpy(self, index, dst: int, src: int, nbytes: int) -> None:
        """Device-to-device bytes on the current stream."""
        self.activate(index)
        self._copy("dtod", dst, src, nbytes, self._native_stream(index))

    def _async_stream(self, index, host, non_blocking: bool):
        """The native stream of an asynchronous copy, or False for a synchronous one. The core
        passes ``non_blocking=True`` only for memory from ``host_alloc`` (it checks the tensor's
        owner: the flat byte view it hands over no longer shows it)."""
        return self._native_stream(index) if non_blocking else False

    def is_pinned(self, array) -> bool:
        """Whether a numpy array lives in page-locked memory from ``host_alloc``."""
        return owned_by(array, self.pinned_type)

    # ---- kernels -----------------------------------------------------------------------------
    def function(self, index: int, kernel: str):
        """The launchable function of ``kernel`` on device ``index`` (module built once)."""
        key = (index, kernel)
        found = self._functions.get(key)
        if found is None:
            with self._lock:
                module_name = codegen.module_of(kernel)
                module = self._modules.get((index, module_name))
                if module is None:
                    module = self._load_module(index, module_name)
                    self._modules[(index, module_name)] = module
                found = self._get_function(module, kernel, codegen.arg_format(kernel))
                self._functions[key] = found
        return found

    def generated(self, index: int, name: str, body: str, kernel: str, arg_format: str):
        """The launchable ``kernel`` of a module made at run time (a fused kernel,
        ember_backend_gpu.fused): ``body`` (without the prelude) is module ``name``, built like
        the codegen modules (the subclass's compiler, its disk cache) once per device."""
        key = (index, name, kernel)
        found = self._functions.get(key)
        if found is None:
            with self._lock:
                self._bodies[name] = body
                module = self._modules.get((index, name))
                if module is None:
                    module = self._load_module(index, name)
                    self._modules[(index, name)] = module
                found = self._get_function(module, kernel, arg_format)
                self._functions[key] = found
        return found

    def module_body(self, name: str) -> str:
        """A kernel module's text without the prelude: a generated one's, or codegen's."""
        found = self._bodies.get(name)
        return codegen.body(name) if found is None else found

    def module_source(self, name: str) -> str:
        """A kernel module's complete text for this runtime's target (what its compiler
        builds)."""
        return codegen.prelude(self.target) + self.module_body(name)

    def launch(self, index, kernel: str, grid, block, *args, shared: int = 0) -> None:
        """Run ``kernel`` on the current stream of device ``index``."""
        index = 0 if index is None else index
        self.call(index, self.function(index, kernel), grid, block, *args, shared=shared)

    def call(self, index: int, function, grid, block, *args, shared: int = 0) -> None:
        """Run a launchable ``function`` (``function`` or ``generated``'s) on the current stream
        of device ``index``."""
        self.activate(index)
        grid = (grid, 1, 1) if grid.__class__ is int else _dim3(grid)
        block = (block, 1, 1) if block.__class__ is int else _dim3(block)
        self.launches += 1
        self._call(function, grid, block, self._native_stream(index), args, shared)

    def launch_1d(self, index, kernel: str, n: int, *args) -> None:
        """A grid-stride kernel over ``n`` items."""
        blocks = launch.grid(n, self.sm_count(index or 0))
        self.launch(index, kernel, blocks, launch.BLOCK, *args)

    def launch_flat(self, index: int, kernel: str, n: int, pointers, nd, tail) -> None:
        """An elementwise kernel over ``n`` contiguous elements (kernels/elementwise.py's flat
        calls): ``(*pointers, status word, *nd, *tail)``, ``launch_1d``'s launch with its
        levels folded."""
        function = self._functions.get((index, kernel)) or self.function(index, kernel)
        self.activate(index)
        self.launches += 1
        grid = (launch.grid(n, self.sm_count(index)), 1, 1)
        args = (*pointers, self.status_word(index), *nd, *tail)
        self._call(function, grid, FLAT_BLOCK, self._native_stream(index), args, 0)

    def status_word(self, index) -> int:
        """Address of the device's status word (kernels store EM_* codes there)."""
        found = self._status.get(index)
        if found is None:
            allocation = self.alloc(4, index)
            found = self.address(allocation)
            self.memset(index, found, 4)
            self._status_allocations[index] = allocation  # kept alive with the runtime
            self._status[index] = found
        return found

    def read_status(self, index) -> int:
        """The status word (waits for queued work), reset to 0 when it was set."""
        address = self.status_word(index)
        host = np.zeros(1, np.int32)
        self.read(index, host, address)
        if host[0]:
            self.memset(index, address, 4)
        return int(host[0])

    def scratch(self, index, nbytes: int) -> int:
        """Device scratch space of at least ``nbytes`` for the current stream, reused by later
        calls on that stream (which the stream orders after this one's kernels)."""
        key = (index, self.current_stream(index).cuda_stream)
        found = self._scratch.get(key)
        if found is None or found.size < nbytes:
            if found is not None:
                self.synchronize(index)  # the old buffer may still be read by queued kernels
                self.free(found.allocation, index)
            size = max(nbytes, 1 << 20)
            found = types.SimpleNamespace(allocation=self.alloc(size, index), size=size)
            self._scratch[key] = found
        return self.address(found.allocation)

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
        """The current stream's native object (None: the device's default stream)."""
        streams = getattr(self._local, "streams", None)
        if not streams:
            return None
        found = streams.get(0 if index is None else index)
        return None if found is None else found.native
