"""In-memory backend plugins for the dispatcher tests.

``RefPlugin`` serves a device type (``"ref"`` by default) from host memory held in numpy arrays,
with only the kernels a device cannot do without (``copy_`` and ``fill_``), written in numpy:
everything else reaches it through the CPU fallback. Like a real plugin it never imports ember;
its kernels read only the attributes of the kernel contract.
"""

from __future__ import annotations

import ctypes

import ember_backend_cpu
import ml_dtypes
import numpy as np
import pluggy

from ember.dispatcher.plugins import BACKENDS_GROUP, OPS_GROUP, extension
from ember.dispatcher.policy import DEFAULT_FILE, Policy, _merge

hookimpl = pluggy.HookimplMarker("ember")

_NP_DTYPES = {"bfloat16": np.dtype(ml_dtypes.bfloat16)}


def host_view(t) -> np.ndarray:
    """A numpy array over a tensor's elements, built from the kernel-contract attributes only."""
    np_dtype = _NP_DTYPES.get(t._dtype.name) or np.dtype(t._dtype.name)
    itemsize = t._dtype.itemsize
    shape, stride = t._shape, t._stride
    if 0 in shape:
        return np.empty(shape, np_dtype)
    low = sum((n - 1) * s for n, s in zip(shape, stride) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, stride) if s > 0)
    start = t._storage.ptr + (t._offset + low) * itemsize
    raw = (ctypes.c_char * ((high - low + 1) * itemsize)).from_address(start)
    return np.ndarray(
        shape,
        dtype=np_dtype,
        buffer=raw,
        offset=-low * itemsize,
        strides=tuple(s * itemsize for s in stride),
    )


def copy_(dst, src):
    host_view(dst)[...] = host_view(src)


def fill_(out, value):
    host_view(out)[...] = value


REF_KERNELS = {"copy_": {"*": copy_}, "fill_": {"*": fill_}}


class RefRuntime:
    """Host memory in numpy byte arrays; the runtime contract of docs/plugins.md."""

    host_memory = True
    cache_min_bytes = 1 << 20

    def __init__(self, count: int = 1):
        self.count = count
        self.allocs = 0
        self.frees = 0

    def device_count(self) -> int:
        return self.count

    def device_name(self, index=None) -> str:
        return "numpy reference device"

    def alloc(self, nbytes: int, index=None):
        self.allocs += 1
        return np.empty(max(nbytes, 1), np.uint8)

    def free(self, handle, index=None) -> None:
        self.frees += 1

    def address(self, handle) -> int:
        return handle.ctypes.data

    def copy_in(self, handle, byte_offset: int, src, index=None) -> None:
        data = np.frombuffer(memoryview(src).cast("B"), np.uint8)
        handle[byte_offset : byte_offset + data.size] = data

    def copy_out(self, dst, handle, byte_offset: int, index=None) -> None:
        out = np.frombuffer(memoryview(dst).cast("B"), np.uint8)
        out[...] = handle[byte_offset : byte_offset + out.size]

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        dst[dst_offset : dst_offset + nbytes] = src[src_offset : src_offset + nbytes]

    def synchronize(self, index=None) -> None:
        pass


class RefPlugin:
    """A backend plugin object. Hooks are methods marked with the plugin's own HookimplMarker.

    Args:
        name: the plugin's (entry-point) name.
        device_types: what ``ember_backend_info`` declares.
        priority: the declared priority (None: not declared).
        kernels: the kernel table ``ember_backend_load`` returns.
        load_error: raised by ``ember_backend_load`` instead of loading.
    """

    def __init__(
        self,
        name="ref",
        device_types=("ref",),
        priority=None,
        kernels=None,
        load_error: BaseException | None = None,
    ):
        self.name = name
        self.device_types = list(device_types)
        self.priority = priority
        self.kernels = REF_KERNELS if kernels is None else kernels
        self.load_error = load_error
        self.loaded: list = []
        self.runtime = RefRuntime()

    @hookimpl
    def ember_backend_info(self):
        info = {"name": self.name, "device_types": self.device_types, "version": "0.0"}
        if self.priority is not None:
            info["priority"] = self.priority
        return info

    @hookimpl
    def ember_backend_load(self, device_type):
        self.loaded.append(device_type)
        if self.load_error is not None:
            raise self.load_error
        return {"runtime": self.runtime, "kernels": dict(self.kernels)}


class FakeManager:
    """Stands in for stevedore's ExtensionManager: the given extensions load, the failures go to
    ``on_load_failure_callback`` exactly as stevedore reports an import error."""

    extensions_by_group: dict = {}
    failures_by_group: dict = {}

    def __init__(self, group, on_load_failure_callback):
        self.extensions = list(self.extensions_by_group.get(group, ()))
        for entry_point, exc in self.failures_by_group.get(group, ()):
            on_load_failure_callback(self, entry_point, exc)


def policy(override: dict | None = None) -> Policy:
    """The shipped policy with ``override`` merged over it (no user file, no environment)."""
    import tomllib

    data = tomllib.loads(DEFAULT_FILE.read_text())
    return Policy(_merge(data, override or {}), (str(DEFAULT_FILE),))


def backends(*named) -> dict:
    """``{group: [Extension]}`` with the real CPU plugin and the given ``(name, plugin)`` pairs."""
    found = [extension("cpu", ember_backend_cpu)]
    found += [extension(name, plugin) for name, plugin in named]
    return {BACKENDS_GROUP: found}


class OpLibrary:
    """An op-library plugin (the ``ember.ops`` group): its hook returns ``definitions``, or
    raises ``error``; ``calls`` counts the hook calls (loading must be lazy and happen once)."""

    def __init__(self, definitions=(), error: BaseException | None = None):
        self.definitions = list(definitions)
        self.error = error
        self.calls = 0

    @hookimpl
    def ember_op_library(self):
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.definitions


def op_libraries(*named) -> dict:
    """``{OPS_GROUP: [Extension]}`` for the given ``(name, plugin)`` pairs."""
    return {OPS_GROUP: [extension(name, plugin) for name, plugin in named]}
