"""A plugin that exits (``sys.exit``) or raises any BaseException but KeyboardInterrupt, at import
or in a hook, is recorded as unavailable with the cause; ember keeps working."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from plugin_fakes import OpLibrary, RefPlugin, hookimpl

import ember
from ember.dispatcher.devices import DeviceUnavailableError
from ember.dispatcher.plugins import BACKENDS_GROUP, OPS_GROUP, contained


def _record(reg, name, group=BACKENDS_GROUP):
    return next(r for r in reg.host.records(group) if r.name == name)


@pytest.mark.parametrize(
    "body, shown",
    [
        ("import sys\nsys.exit(3)\n", "SystemExit(3)"),
        ("raise GeneratorExit('odd')\n", "GeneratorExit('odd')"),
    ],
    ids=["sys-exit", "generator-exit"],
)
def test_installed_plugin_that_exits_at_import_is_isolated(tmp_path, body, shown):
    """The real stevedore path: stevedore lets BaseExceptions escape its loader."""
    (tmp_path / "exiting_backend.py").write_text(body)
    dist = tmp_path / "exiting_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: exiting-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ember.backends]\nexiting = exiting_backend\n")
    script = textwrap.dedent(
        """
        import ember
        from ember.dispatcher.devices import REGISTRY
        print((ember.ones(2) + 1).tolist())
        print((ember.ones(2) * 3).tolist())
        record = [r for r in REGISTRY.host.records("ember.backends") if r.name == "exiting"][0]
        print(record.ok, record.error)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path), EMBER_BACKEND_AUTOLOAD="1")
    env.pop("EMBER_PLUGINS_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["[2.0, 2.0]", "[3.0, 3.0]"]
    assert lines[2].startswith("False PluginExitError: importing plugin 'exiting'")
    assert shown in lines[2]


class _InfoExits:
    loaded: list = []

    @hookimpl
    def ember_backend_info(self):
        raise SystemExit("no device here")


def test_backend_info_that_exits_is_recorded(plugins):
    reg = plugins(("bad", _InfoExits()))
    record = _record(reg, "bad")
    assert not record.ok
    assert "SystemExit('no device here')" in record.error
    assert "Traceback" in record.error_detail
    assert (ember.ones(1) * 3).tolist() == [3.0]


def test_backend_load_that_exits_is_recorded_and_cached(plugins):
    plugin = RefPlugin(load_error=SystemExit(2))
    plugins(("ref", plugin))
    assert (ember.ones(1) + 1).tolist() == [2.0]
    for _ in range(2):
        with pytest.raises(
            DeviceUnavailableError, match=r"ref: PluginExitError: .*SystemExit\(2\)"
        ):
            ember.zeros(2, device="ref")
    assert plugin.loaded == ["ref"]  # the failure is cached, not retried


def test_op_library_that_exits_is_recorded(plugins):
    reg = plugins(op_libraries=[("bad", OpLibrary(error=SystemExit(1)))])
    reg.host.op_libraries()
    record = _record(reg, "bad", OPS_GROUP)
    assert not record.ok and "SystemExit(1)" in record.error
    assert (ember.ones(2) * 2).tolist() == [2.0, 2.0]


def test_keyboard_interrupt_propagates():
    with pytest.raises(KeyboardInterrupt):
        contained(KeyboardInterrupt(), "importing plugin 'x'")
    error = ValueError("kept")
    assert contained(error, "importing plugin 'x'") is error
