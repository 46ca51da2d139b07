"""``pycuda.driver`` as the CPU emulator serves it (``EMBER_CUDA_EMULATOR=driver``), counting
every driver call: the CUDA plugin's ``CudaRuntime`` (ember_backend_cuda/runtime.py, the pycuda
hooks the plain emulator replaces) runs over this module instead of pycuda, so the tests and
``benchmarks/cuda_driver_calls.py`` see what one op asks of the driver: launches, allocations,
copies, synchronisations, context and stream calls.

Only the part of pycuda's surface that ember uses is here. Calls count under the CUDA driver
function pycuda makes for them (``CALLS``, a Counter). Memory is the emulator's (host memory
behind device addresses), kernels are the emulator's builds of the same source
(``compile_module`` stands in for nvcc), and streams and events are synchronous. Not here: IPC
handles, texture references, peer access.
"""

from __future__ import annotations

import collections
import ctypes
import types

import numpy as np

from . import codegen, emulator

CALLS: collections.Counter = collections.Counter()  # CUDA driver function -> calls


class Error(Exception):
    """pycuda.driver.Error."""


class MemoryError(Error):  # pycuda.driver names it so
    """pycuda.driver.MemoryError."""


device_attribute = types.SimpleNamespace(MULTIPROCESSOR_COUNT=16)  # CUdevice_attribute's value
event_flags = types.SimpleNamespace(BLOCKING_SYNC=1, DISABLE_TIMING=2)
SM_COUNT = 1  # as the plain emulator's: it runs one block at a time, so grids stay small


def init(flags: int = 0) -> None:
    CALLS["cuInit"] += 1


def get_version() -> tuple:
    return (12, 4, 0)


def mem_get_info() -> tuple[int, int]:
    CALLS["cuMemGetInfo"] += 1
    return 1 << 34, 1 << 34


class Device:
    def __init__(self, index: int):
        CALLS["cuDeviceGet"] += 1
        self.index = index

    @staticmethod
    def count() -> int:
        CALLS["cuDeviceGetCount"] += 1
        return 1

    def name(self) -> str:
        return "ember CUDA emulator (CPU, emulated driver)"

    def compute_capability(self) -> tuple[int, int]:
        return 8, 0

    def total_memory(self) -> int:
        return 1 << 34

    def get_attribute(self, attribute) -> int:
        CALLS["cuDeviceGetAttribute"] += 1
        return SM_COUNT

    def retain_primary_context(self):
        CALLS["cuDevicePrimaryCtxRetain"] += 1
        return _PrimaryContext()


class _PrimaryContext:
    def push(self) -> None:
        CALLS["cuCtxPushCurrent"] += 1


class Context:
    @staticmethod
    def pop() -> None:
        CALLS["cuCtxPopCurrent"] += 1

    @staticmethod
    def synchronize() -> None:
        CALLS["cuCtxSynchronize"] += 1


class DeviceAllocation:
    """``mem_alloc``'s result: ``int()`` is the device address; ``free()`` releases it."""

    def __init__(self, nbytes: int):
        self._memory = emulator.device_memory(nbytes)
        self._address = self._memory.ctypes.data

    def __int__(self) -> int:
        return self._address

    __index__ = __int__

    def free(self) -> None:
        CALLS["cuMemFree"] += 1
        self._memory = None


def mem_alloc(nbytes: int) -> DeviceAllocation:
    CALLS["cuMemAlloc"] += 1
    return DeviceAllocation(nbytes)


class PagelockedHostAllocation(bytearray):
    """The owner of ``pagelocked_empty``'s memory (what ``is_pinned`` looks for)."""


def pagelocked_empty(shape, dtype) -> np.ndarray:
    CALLS["cuMemHostAlloc"] += 1
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    return np.frombuffer(PagelockedHostAllocation(count * dtype.itemsize), dtype).reshape(shape)


def _address(value) -> int:
    return value.ctypes.data if isinstance(value, np.ndarray) else int(value)


def _move(dst, src, nbytes: int) -> None:
    ctypes.memmove(_address(dst), _address(src), nbytes)


def memcpy_htod(dst, src) -> None:
    CALLS["cuMemcpyHtoD"] += 1
    _move(dst, src, src.nbytes)


def memcpy_dtoh(dst, src) -> None:
    CALLS["cuMemcpyDtoH"] += 1
    _move(dst, src, dst.nbytes)


def memcpy_htod_async(dst, src, stream=None) -> None:
    CALLS["cuMemcpyHtoDAsync"] += 1
    _move(dst, src, src.nbytes)


def memcpy_dtoh_async(dst, src, stream=None) -> None:
    CALLS["cuMemcpyDtoHAsync"] += 1
    _move(dst, src, dst.nbytes)


def memcpy_dtod_async(dst, src, nbytes: int, stream=None) -> None:
    CALLS["cuMemcpyDtoDAsync"] += 1
    _move(dst, src, nbytes)


def memset_d8_async(dst, value: int, count: int, stream=None) -> None:
    CALLS["cuMemsetD8Async"] += 1
    ctypes.memset(_address(dst), value, count)


def compile_module(source: str, arch) -> bytes:
    """nvcc's stand-in: the emulator's host build of a module's complete CUDA source; the
    "binary" ``module_from_buffer`` loads is the library's path."""
    prelude = codegen.prelude("cuda")
    if not source.startswith(prelude):
        raise Error("compile_module: not a module of ember's CUDA codegen (prelude missing)")
    return str(emulator.build_module("driver", source[len(prelude) :])).encode()


class Module:
    def __init__(self, library):
        self._library = library

    def get_function(self, name: str) -> Function:
        CALLS["cuModuleGetFunction"] += 1
        return Function(self._library, name)


def module_from_buffer(binary: bytes) -> Module:
    CALLS["cuModuleLoadData"] += 1
    return Module(ctypes.CDLL(binary.decode()))


class Function:
    """A kernel: the ``_launch_kernel`` that pycuda's prepared calls end in (runtime.py calls
    it directly; pycuda's ``prepared_async_call`` adds a ``cuFuncSetBlockShape`` per launch)."""

    def __init__(self, library, name: str):
        self._kernel = emulator.EmulatedKernel(library, name)

    def _launch_kernel(self, grid, block, buffer, shared_size: int, stream) -> None:
        CALLS["cuLaunchKernel"] += 1
        self._kernel.run(tuple(grid), tuple(block), buffer)


class Stream:
    def __init__(self, flags: int = 0):
        CALLS["cuStreamCreate"] += 1
        self.handle = id(self)

    def synchronize(self) -> None:
        CALLS["cuStreamSynchronize"] += 1

    def is_done(self) -> bool:
        CALLS["cuStreamQuery"] += 1
        return True

    def wait_for_event(self, event) -> None:
        CALLS["cuStreamWaitEvent"] += 1


class Event:
    def __init__(self, flags: int = 0):
        CALLS["cuEventCreate"] += 1
        self._host = emulator.HostEvent(True, False)

    def record(self, stream=None) -> Event:
        CALLS["cuEventRecord"] += 1
        self._host.record(stream)
        return self

    def query(self) -> bool:
        CALLS["cuEventQuery"] += 1
        return True

    def synchronize(self) -> Event:
        CALLS["cuEventSynchronize"] += 1
        return self

    def time_since(self, start) -> float:
        CALLS["cuEventElapsedTime"] += 1
        return self._host.time_since(start._host)
