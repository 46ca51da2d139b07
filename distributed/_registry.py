"""Which collective backends exist: the built-ins and the ``ember.distributed_backends`` group.

Discovery is lazy and never raises: a plugin that fails to import or describe itself is kept
with the root cause, shown when a group asks for it. Built-in backends are registered in memory
(as PyTorch builds its own in); an installed entry point of the same name replaces one, so a
third party can ship a better ``mpi``.
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass, field

import pluggy

from . import hookspecs

GROUP = "ember.distributed_backends"
BUILTIN = {
    "mpi": "ember.distributed.backends.mpi",
    "nccl": "ember.distributed.backends.nccl",
}


@dataclass
class BackendRecord:
    """One collective backend plugin and what became of it."""

    name: str
    target: str
    plugin: object = None
    info: dict = field(default_factory=dict)
    error: str | None = None
    error_detail: str | None = None

    @property
    def priority(self) -> int:
        return int(self.info.get("priority", 0))


class Registry:
    """The collective backends of one process (or the given in-memory plugins, for tests).

    Args:
        plugins: ``{name: plugin object}`` to use instead of discovery.
    """

    def __init__(self, plugins: dict | None = None):
        self._given = plugins
        self._records: dict[str, BackendRecord] | None = None
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)

    def records(self) -> dict[str, BackendRecord]:
        if self._records is None:
            self._records = {}
            for name, target, load in self._candidates():
                self._records[name] = self._register(name, target, load)
        return self._records

    def _candidates(self):
        from stevedore import ExtensionManager  # discovery is lazy, and so is its import

        if self._given is not None:
            for name, plugin in self._given.items():
                yield name, "<in memory>", lambda plugin=plugin: plugin
            return
        found = {}
        failed = []

        def on_failure(_manager, entry_point, exc):
            failed.append((entry_point.name, entry_point.value, exc))

        for ext in ExtensionManager(GROUP, on_load_failure_callback=on_failure).extensions:
            found[ext.name] = (ext.entry_point.value, lambda plugin=ext.plugin: plugin)
        for name, module in BUILTIN.items():
            found.setdefault(name, (module, lambda module=module: importlib.import_module(module)))
        for name, (target, load) in found.items():
            yield name, target, load
        for name, target, exc in failed:
            yield name, target, _raiser(exc)

    def _register(self, name: str, target: str, load) -> BackendRecord:
        record = BackendRecord(name, target)
        try:
            record.plugin = load()
            self.manager.register(record.plugin, name=f"{GROUP}:{name}")
            info = self.call(record, "ember_collective_backend_info")
            if not isinstance(info, dict) or not info.get("device_types"):
                raise TypeError(
                    "ember_collective_backend_info() must return a dict with 'device_types', "
                    f"got {info!r}"
                )
            record.info = info
        except Exception as exc:
            from ember.dispatcher.plugins import root_cause

            record.error = root_cause(exc)
            record.error_detail = "".join(traceback.format_exception(exc))
        return record

    def call(self, record: BackendRecord, hook: str, **kwargs):
        """Call ``hook`` on ``record``'s plugin only; None when the plugin lacks the hook."""
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            if impl.plugin is record.plugin:
                return impl.function(**{k: v for k, v in kwargs.items() if k in impl.argnames})
        return None

    def get(self, name: str) -> BackendRecord:
        """The usable backend called ``name``; a ValueError or RuntimeError says why not."""
        record = self.records().get(name)
        if record is None:
            known = ", ".join(sorted(self.records())) or "none"
            hint = ""
            if name == "gloo":
                hint = " (ember has no Gloo engine: 'mpi' runs cpu collectives)"
            raise ValueError(f"Invalid backend: '{name}'{hint}; available: {known}")
        if record.error:
            raise RuntimeError(f"the '{name}' collective backend cannot be used: {record.error}")
        return record

    def default_for(self, device_type: str) -> str | None:
        """The name of the highest-priority working backend that serves ``device_type``."""
        serving = [
            r
            for r in self.records().values()
            if not r.error and device_type in r.info["device_types"]
        ]
        return max(serving, key=lambda r: r.priority).name if serving else None


def _raiser(exc: BaseException):
    def load():
        raise exc

    return load
