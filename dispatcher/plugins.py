"""Plugin discovery: stevedore finds entry points, pluggy checks and calls their hooks.

Discovery is lazy (first device use or ``python -m ember.plugins``) and never raises: a plugin that
fails to import, to describe itself or to initialise is kept as a record with the root cause, which
is shown when its device is requested.
"""

from __future__ import annotations

import importlib.metadata
import traceback
from dataclasses import dataclass, field

import pluggy
from stevedore import ExtensionManager as _StevedoreManager
from stevedore.extension import Extension

from . import hookspecs

BACKENDS_GROUP = "ember.backends"
OPS_GROUP = "ember.ops"


def root_cause(exc: BaseException) -> str:
    """``Type: message`` of the innermost exception in a chain. ``raise ... from None`` ends the
    chain, as in Python's tracebacks: the plugin says its message is the cause to show."""
    while exc.__cause__ is not None or (
        exc.__context__ is not None and not exc.__suppress_context__
    ):
        if isinstance(exc, PluginExitError):  # its message says more than "SystemExit: 3"
            break
        exc = exc.__cause__ or exc.__context__
    return f"{type(exc).__name__}: {exc}"


class PluginExitError(Exception):
    """A plugin raised a BaseException that is not an Exception (``sys.exit()`` at import, say).

    It is contained like any failure: one plugin must not end the process nor every op call."""


def contained(exc: BaseException, what: str) -> Exception:
    """``exc`` as an Exception to record. KeyboardInterrupt is the user's and propagates."""
    if isinstance(exc, Exception):
        return exc
    if isinstance(exc, KeyboardInterrupt):
        raise exc
    wrapped = PluginExitError(
        f"{what} raised {type(exc).__name__}({', '.join(map(repr, exc.args))}); a plugin must "
        "raise an Exception, never exit the process"
    )
    wrapped.__cause__ = exc
    return wrapped


class ExtensionManager(_StevedoreManager):
    """stevedore's manager, except that a plugin whose import raises SystemExit (or another
    BaseException) is reported to ``on_load_failure_callback`` like one raising ImportError;
    stevedore lets those escape, and discovery would then fail on every op call."""

    def _load_one_plugin(self, ep, *args, **kwargs):
        try:
            return super()._load_one_plugin(ep, *args, **kwargs)
        except Exception:
            raise
        except BaseException as exc:
            raise contained(exc, f"importing plugin '{ep.name}' ({ep.value})") from exc


@dataclass
class PluginRecord:
    """One discovered plugin and what became of it."""

    name: str
    group: str
    target: str
    distribution: str | None = None
    version: str | None = None
    obj: object = None
    info: dict = field(default_factory=dict)
    error: str | None = None  # import / registration / describe failure (root cause)
    error_detail: str | None = None
    loads: dict = field(default_factory=dict)  # device type -> dict result or exception

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def device_types(self) -> list[str]:
        return list(self.info.get("device_types", ()))


def _distribution_of(entry_point):
    """(distribution name, version) that installed an entry point."""
    dist = getattr(entry_point, "dist", None)
    if dist is None:  # stevedore's entry-point cache drops .dist; ask importlib.metadata
        for candidate in importlib.metadata.entry_points(group=entry_point.group):
            if candidate.name == entry_point.name and candidate.value == entry_point.value:
                dist = candidate.dist
                break
    if dist is None:
        return None, None
    return dist.metadata["Name"], dist.version


class PluginHost:
    """The plugins of one process: discovered lazily, or given in memory (tests).

    Args:
        extensions: ``{group: [stevedore Extension]}`` to use instead of installed entry points.
        autoload: discover installed entry points when ``extensions`` is not given.
    """

    def __init__(self, extensions: dict | None = None, autoload: bool = True):
        self._given = extensions
        self._autoload = autoload
        self._records: dict[str, list[PluginRecord]] | None = None
        self._discovering = False
        self.manager = pluggy.PluginManager(hookspecs.PROJECT)
        self.manager.add_hookspecs(hookspecs)

    @property
    def discovers(self) -> bool:
        """Whether installed entry points are scanned (not for in-memory plugins, nor with
        autoload off)."""
        return self._given is None and self._autoload

    # ---- discovery ------------------------------------------------------------------------------
    def records(self, group: str) -> list[PluginRecord]:
        if self._records is None:
            if self._discovering:  # a plugin's import touched ember.plugins again
                return []
            self._discovering = True
            try:
                self._records = {g: self._discover(g) for g in (BACKENDS_GROUP, OPS_GROUP)}
            finally:
                self._discovering = False
        return self._records[group]

    def _discover(self, group: str) -> list[PluginRecord]:
        failures: list[PluginRecord] = []

        def on_failure(_manager, entry_point, exc):
            record = PluginRecord(entry_point.name, group, entry_point.value)
            record.distribution, record.version = _distribution_of(entry_point)
            record.error = root_cause(exc)
            record.error_detail = "".join(traceback.format_exception(exc))
            failures.append(record)

        if self._given is not None:
            extensions = list(self._given.get(group, ()))
        elif self._autoload:
            manager = ExtensionManager(group, on_load_failure_callback=on_failure)
            extensions = list(manager.extensions)
        else:
            extensions = []
        records = [self._register(group, ext) for ext in extensions]
        return records + failures

    def _register(self, group: str, ext: Extension) -> PluginRecord:
        target = getattr(ext.entry_point, "value", None) or "<in memory>"
        record = PluginRecord(ext.name, group, target, obj=ext.plugin)
        if ext.entry_point is not None:
            record.distribution, record.version = _distribution_of(ext.entry_point)
        try:
            self.manager.register(ext.plugin, name=f"{group}:{ext.name}")
            if group == BACKENDS_GROUP:
                info = self._call_one(record, "ember_backend_info")
                if not isinstance(info, dict) or not info.get("device_types"):
                    raise TypeError(
                        f"ember_backend_info() must return a dict with 'device_types', got {info!r}"
                    )
                record.info = info
                record.version = record.version or info.get("version")
        except BaseException as raised:
            exc = contained(raised, f"plugin '{record.name}' registering")
            record.error = root_cause(exc)
            record.error_detail = "".join(traceback.format_exception(exc))
        return record

    def _call_one(self, record: PluginRecord, hook: str, **kwargs):
        """Call ``hook`` on one plugin only (pluggy would call every plugin's, in its own order).

        Like pluggy, pass only the arguments the implementation names: a hook spec can grow an
        argument without breaking plugins written before it.
        """
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            if impl.plugin is record.obj:
                return impl.function(**{k: v for k, v in kwargs.items() if k in impl.argnames})
        raise AttributeError(f"plugin '{record.name}' does not implement {hook}()")

    # ---- backends --------------------------------------------------------------------------------
    def load(self, record: PluginRecord, device_type: str, config: dict | None = None):
        """Initialise ``record`` for ``device_type`` once; returns the dict or the exception.

        ``config`` is the plugin's table of the policy (``[backends.<name>]``).
        """
        if device_type not in record.loads:
            try:
                result = self._call_one(
                    record, "ember_backend_load", device_type=device_type, config=dict(config or {})
                )
                if not isinstance(result, dict) or "runtime" not in result:
                    raise TypeError(
                        f"ember_backend_load('{device_type}') must return a dict with 'runtime' "
                        f"and 'kernels', got {type(result).__name__}"
                    )
                record.loads[device_type] = result
            except BaseException as raised:
                exc = contained(raised, f"plugin '{record.name}' loading '{device_type}'")
                exc.ember_detail = "".join(traceback.format_exception(exc))
                record.loads[device_type] = exc
        return record.loads[device_type]

    def op_libraries(self) -> list[tuple[PluginRecord, list]]:
        """``(record, definitions)`` for every op plugin that described itself."""
        out = []
        for record in self.records(OPS_GROUP):
            if not record.ok:
                continue
            try:
                out.append((record, list(self._call_one(record, "ember_op_library") or ())))
            except BaseException as raised:
                exc = contained(raised, f"plugin '{record.name}' describing its ops")
                record.error = root_cause(exc)
                record.error_detail = "".join(traceback.format_exception(exc))
        return out


def extension(name: str, plugin) -> Extension:
    """An in-memory stevedore extension, for tests and for plugins registered in-process."""
    return Extension(name, None, plugin, None)
