"""In-memory backend plugins for the dispatcher tests.

``RefPlugin`` serves a device type (``"ref"`` by default) from host memory held in numpy arrays,
with only the kernels a device cannot do without (``copy_`` and ``fill_``): everything else
reaches it through the CPU fallback. Its runtime and kernels are those of the example backend
(examples/ember-backend-example), loaded from the source tree under another module name, so the
tests never depend on what is installed; like a real plugin they never import ember.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import ember_backend_cpu
import pluggy

from ember.dispatcher.plugins import BACKENDS_GROUP, OPS_GROUP, extension
from ember.dispatcher.policy import DEFAULT_FILE, Policy, _merge

hookimpl = pluggy.HookimplMarker("ember")

_EXAMPLE = Path(__file__).resolve().parents[2] / "examples/ember-backend-example/ember_backend_ref"


def _example_module(name: str):
    """``ember_backend_ref.<name>`` from the source tree, as ``_ref_example.<name>``."""
    if "_ref_example" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "_ref_example", _EXAMPLE / "__init__.py", submodule_search_locations=[str(_EXAMPLE)]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules["_ref_example"] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"_ref_example.{name}")


_kernels = _example_module("kernels")
host_view = _kernels.host_view  # a numpy array over a tensor, from the kernel contract only
REF_KERNELS = {"copy_": {"*": _kernels.copy_}, "fill_": {"*": _kernels.fill_}}


class RefRuntime(_example_module("runtime").RefRuntime):
    """The example's runtime, counting allocations, with ``count`` devices; host memory (numpy
    reads it directly) and the caching allocator only for large requests, like the CPU's."""

    host_memory = True
    cache_min_bytes = 1 << 20

    def __init__(self, count: int = 1):
        self.count = count
        self.allocs = 0
        self.frees = 0

    def device_count(self) -> int:
        return self.count

    def alloc(self, nbytes: int, index=None):
        self.allocs += 1
        return super().alloc(nbytes, index)

    def free(self, handle, index=None) -> None:
        self.frees += 1


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
