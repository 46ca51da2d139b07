"""The device registry: which loaded backend serves each device type, and its memory.

``REGISTRY.backend("cuda")`` picks, among the enabled plugins declaring that device type, the one
with the highest priority that initialises; the failures of the others are kept as reasons.
Everything is resolved once and cached; ``REGISTRY.reset()`` starts over (tests build in-memory
plugins with it).
"""

from __future__ import annotations

import threading

from .allocator import CachingAllocator
from .plugins import BACKENDS_GROUP, PluginHost, PluginRecord, root_cause
from .policy import Policy

# Kernels a backend must provide for its device to be usable at all: everything else can come from a
# decomposition or the CPU fallback, but moving data into a strided tensor needs the device itself.
REQUIRED_KERNELS = ("copy_",)


class DeviceUnavailableError(RuntimeError):
    """No installed backend can serve a device type; the message says why for each candidate."""


class DeviceBackend:
    """A loaded backend serving one device type."""

    __slots__ = (
        "_allocators",
        "_lock",
        "cache_min_bytes",
        "device_type",
        "fallback",
        "kernels",
        "priority",
        "record",
        "runtime",
    )

    def __init__(self, device_type: str, record: PluginRecord, priority: int, loaded: dict, policy):
        self.device_type = device_type
        self.record = record
        self.priority = priority
        self.runtime = loaded["runtime"]
        self.kernels = dict(loaded.get("kernels") or {})
        self.fallback = device_type != "cpu" and policy.cpu_fallback(record.name)
        self.cache_min_bytes = getattr(self.runtime, "cache_min_bytes", 0)
        if hasattr(self.runtime, "flags"):
            from ember.backends import flags

            self.runtime.flags = flags(device_type)  # ember.backends.<type> switches, live
        self._allocators: dict = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.record.name

    def device_count(self) -> int:
        return int(self.runtime.device_count())

    def allocator(self, index: int | None) -> CachingAllocator:
        found = self._allocators.get(index)
        if found is None:
            with self._lock:
                found = self._allocators.get(index)
                if found is None:
                    runtime = self.runtime
                    label = self.device_type if index is None else f"{self.device_type}:{index}"
                    found = CachingAllocator(
                        lambda n: runtime.alloc(n, index),
                        lambda handle: runtime.free(handle, index),
                        label,
                    )
                    self._allocators[index] = found
        return found

    def allocators(self) -> dict:
        return dict(self._allocators)


class Registry:
    """Plugins, policy and the chosen backend per device type, for this process."""

    def __init__(self):
        self._lock = threading.RLock()
        self.reset()

    def reset(self, extensions: dict | None = None, policy: Policy | None = None) -> None:
        """Forget every resolution; use ``extensions`` (``{group: [Extension]}``) if given."""
        with self._lock:
            self.policy = policy or Policy.load()
            self.host = PluginHost(extensions, autoload=self.policy.autoload)
            self._backends: dict = {}
            self._failures: dict = {}
            self.generation = getattr(self, "generation", 0) + 1
            for listener in _RESET_LISTENERS:
                listener()

    def candidates(self, device_type: str) -> list[tuple[int, PluginRecord]]:
        """Enabled plugins that declare ``device_type``, highest priority first."""
        found = []
        for record in self.host.records(BACKENDS_GROUP):
            if (
                record.ok
                and device_type in record.device_types
                and self.policy.enabled(record.name)
            ):
                found.append(
                    (self.policy.priority(record.name, record.info.get("priority")), record)
                )
        found.sort(key=lambda pair: -pair[0])
        return found

    def backend(self, device_type: str) -> DeviceBackend:
        found = self._backends.get(device_type)
        if found is not None:
            return found
        with self._lock:
            if device_type in self._backends:
                return self._backends[device_type]
            if device_type in self._failures:
                raise DeviceUnavailableError(self._failures[device_type])
            if device_type in BUILTIN:
                chosen = BUILTIN[device_type](self.policy)
                self._backends[device_type] = chosen
                return chosen
            reasons = []
            for priority, record in self.candidates(device_type):
                loaded = self.host.load(record, device_type, self.policy.backend(record.name))
                if isinstance(loaded, BaseException):
                    reasons.append(f"  {record.name}: {root_cause(loaded)}")
                    continue
                missing = [k for k in REQUIRED_KERNELS if k not in (loaded.get("kernels") or {})]
                if missing:
                    reasons.append(f"  {record.name}: missing required kernels {missing}")
                    continue
                chosen = DeviceBackend(device_type, record, priority, loaded, self.policy)
                self._backends[device_type] = chosen
                return chosen
            message = self._explain_missing(device_type, reasons)
            self._failures[device_type] = message
            raise DeviceUnavailableError(message)

    def _explain_missing(self, device_type: str, reasons: list[str]) -> str:
        records = self.host.records(BACKENDS_GROUP)
        if reasons:
            return f"device type '{device_type}' is unavailable:\n" + "\n".join(reasons)
        broken = [f"  {r.name} ({r.target}): {r.error}" for r in records if not r.ok]
        if broken:
            return (
                f"no working backend provides device type '{device_type}'; these plugins failed "
                "to load and may be the one you want:\n" + "\n".join(broken)
            )
        known = sorted({t for r in records if r.ok for t in r.device_types})
        disabled = [r.name for r in records if r.ok and not self.policy.enabled(r.name)]
        hint = f" (disabled by plugins.toml: {', '.join(disabled)})" if disabled else ""
        if not self.host.discovers:
            fix = (
                "Installed plugins are not discovered: autoload is off (EMBER_BACKEND_AUTOLOAD=0 "
                f"or [autoload] in {', '.join(self.policy.sources)})"
            )
        else:
            fix = f"Install one, e.g. pip install ember-backend-{device_type}"
        return (
            f"no backend plugin provides device type '{device_type}'; available device types: "
            f"{', '.join(known) or 'none'}{hint}. {fix}"
        )

    def loaded_backends(self) -> dict:
        return dict(self._backends)


_RESET_LISTENERS: list = []

# Device types the core serves itself, whatever plugins are installed: device type -> a loader
# ``(policy) -> DeviceBackend``. Not plugin records, so tests that enumerate devices skip them.
BUILTIN: dict = {}


def _load_meta(policy):
    from .meta import load_backend

    return load_backend(policy)


BUILTIN["meta"] = _load_meta


def on_reset(listener) -> None:
    """Call ``listener()`` whenever the registry is reset (caches keyed on backends use this)."""
    _RESET_LISTENERS.append(listener)


REGISTRY = Registry()
