"""Plugin discovery and policy, with in-memory plugins only (never what happens to be installed)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from importlib.metadata import EntryPoint

import plugin_fakes as fakes
import pytest
from plugin_fakes import RefPlugin, hookimpl

import ember
from ember.dispatcher import plugins as plugins_mod
from ember.dispatcher import registry
from ember.dispatcher.devices import DeviceUnavailableError
from ember.dispatcher.plugins import BACKENDS_GROUP, extension
from ember.dispatcher.policy import Policy


def _record(reg, name):
    return next(r for r in reg.host.records(BACKENDS_GROUP) if r.name == name)


# ---- a working device through the CPU fallback ---------------------------------------------------
def test_fake_device_runs_through_cpu_fallback(plugins):
    plugin = RefPlugin()
    reg = plugins(("ref", plugin))
    assert plugin.loaded == []  # registration is cheap: nothing loads before the device is used
    x = ember.ones(3, device="ref")
    assert plugin.loaded == ["ref"]
    assert x.device == ember.device("ref", 0) == "ref:0"
    assert x.tolist() == [1.0, 1.0, 1.0]
    before = registry.FALLBACK_COUNTS["add"]
    with pytest.warns(registry.PerformanceWarning, match="'add' has no ref kernel"):
        y = x + 1
    assert y.device == "ref:0"
    assert y.tolist() == [2.0, 2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per op: the second call is silent
        z = x + y
    assert z.tolist() == [3.0, 3.0, 3.0]
    assert registry.FALLBACK_COUNTS["add"] == before + 2
    with pytest.warns(registry.PerformanceWarning, match="'mul'"):  # another op warns on its own
        assert (x * 4).tolist() == [4.0, 4.0, 4.0]
    assert reg.backend("ref").runtime.allocs > 0
    assert plugin.loaded == ["ref"]  # loaded once, cached


def test_fallback_writes_back_in_place_results(plugins):
    plugins(("ref", RefPlugin()))
    x = ember.ones(2, 3, device="ref")
    with pytest.warns(registry.PerformanceWarning):
        x.mul_(5)
    assert x.tolist() == [[5.0] * 3] * 2
    assert x.device == "ref:0"


def test_fake_device_copies_and_casts_natively(plugins):
    plugins(("ref", RefPlugin()))
    cpu = ember.arange(6).view(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # copy_ and fill_ are the device's own kernels
        on_ref = cpu.to("ref")
        as_float = on_ref.to(ember.float64)
        back = on_ref.T.contiguous().cpu()
    assert on_ref.device == "ref:0" and as_float.dtype is ember.float64
    assert as_float.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert back.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_no_warning_when_policy_says_so(plugins):
    plugins(("ref", RefPlugin()), policy=fakes.policy({"fallback": {"warn": False}}))
    x = ember.ones(2, device="ref")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (x - 1).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "override",
    [{"fallback": {"cpu": False}}, {"backends": {"ref": {"fallback": False}}}],
    ids=["global", "per-backend"],
)
def test_fallback_disabled_raises_naming_op_device_dtype_and_providers(plugins, override):
    plugins(("ref", RefPlugin()), policy=fakes.policy(override))
    x = ember.ones(3, device="ref")
    with pytest.raises(NotImplementedError) as info:
        x + 1
    message = str(info.value)
    for part in ("'add'", "'ref'", "float32", "cpu (cpu:", "CPU fallback is off"):
        assert part in message


def test_per_backend_fallback_overrides_global(plugins):
    policy = fakes.policy({"fallback": {"cpu": False}, "backends": {"ref": {"fallback": True}}})
    plugins(("ref", RefPlugin()), policy=policy)
    with pytest.warns(registry.PerformanceWarning):
        assert (ember.ones(1, device="ref") + 1).tolist() == [2.0]


def test_reset_forgets_memoised_kernels(plugins):
    """A kernel memoised under one configuration must not serve another one."""
    plugins(("ref", RefPlugin()))
    with pytest.warns(registry.PerformanceWarning):
        ember.ones(1, device="ref") + 1
    plugins(("ref", RefPlugin()), policy=fakes.policy({"fallback": {"cpu": False}}))
    with pytest.raises(NotImplementedError):
        ember.ones(1, device="ref") + 1


# ---- plugins that fail ---------------------------------------------------------------------
def _chained(error: Exception, cause: Exception) -> Exception:
    """``error`` raised from ``cause``: the root cause is the one to report."""
    error.__cause__ = cause
    return error


def test_plugin_that_fails_to_import_is_recorded(plugins, monkeypatch):
    entry_point = EntryPoint("broken", "broken_backend:plugin", BACKENDS_GROUP)
    failure = _chained(
        ImportError("No module named 'broken_native'"),
        OSError("libbroken.so: cannot open shared object file"),
    )
    monkeypatch.setattr(fakes.FakeManager, "extensions_by_group", fakes.backends())
    monkeypatch.setattr(
        fakes.FakeManager,
        "failures_by_group",
        {BACKENDS_GROUP: [(entry_point, failure)]},
    )
    monkeypatch.setattr(plugins_mod, "ExtensionManager", fakes.FakeManager)
    reg = plugins(discover=True)  # through the (fake) entry points
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]  # the CPU is unaffected
    record = _record(reg, "broken")
    assert not record.ok
    assert record.target == "broken_backend:plugin"
    assert record.error == "OSError: libbroken.so: cannot open shared object file"
    assert "ImportError" in record.error_detail
    with pytest.raises(DeviceUnavailableError) as info:
        ember.ones(1, device="cuda")
    assert "broken (broken_backend:plugin): OSError: libbroken.so" in str(info.value)


class _InfoRaises(RefPlugin):
    @hookimpl
    def ember_backend_info(self):
        raise ValueError("no config found")


class _InfoJunk(RefPlugin):
    def __init__(self, junk):
        super().__init__()
        self.junk = junk

    @hookimpl
    def ember_backend_info(self):
        return self.junk


@pytest.mark.parametrize(
    "plugin, cause",
    [
        (_InfoRaises(), "ValueError: no config found"),
        (_InfoJunk(None), "must return a dict with 'device_types', got None"),
        (_InfoJunk(["ref"]), "must return a dict with 'device_types'"),
        (_InfoJunk({"name": "ref"}), "must return a dict with 'device_types'"),
        (_InfoJunk({"device_types": []}), "must return a dict with 'device_types'"),
    ],
    ids=["raises", "none", "list", "no-device-types", "empty-device-types"],
)
def test_plugin_whose_info_fails_is_recorded(plugins, plugin, cause):
    reg = plugins(("bad", plugin))
    record = _record(reg, "bad")
    assert not record.ok and cause in record.error
    assert (ember.ones(1) * 3).tolist() == [3.0]
    assert plugin.loaded == []
    with pytest.raises(DeviceUnavailableError, match=r"these plugins failed to load[\s\S]*bad"):
        ember.ones(1, device="ref")


def test_plugin_whose_load_fails_reports_the_root_cause(plugins):
    error = _chained(RuntimeError("could not initialise the ref runtime"), OSError("libref.so"))
    plugin = RefPlugin(load_error=error)
    plugins(("ref", plugin))
    assert (ember.ones(1) + 1).tolist() == [2.0]
    for _ in range(2):  # the failure is cached, not retried
        with pytest.raises(DeviceUnavailableError) as info:
            ember.zeros(2, device="ref")
        assert "device type 'ref' is unavailable" in str(info.value)
        assert "ref: OSError: libref.so" in str(info.value)
    assert plugin.loaded == ["ref"]


@pytest.mark.parametrize("result", [None, {"kernels": {}}, "runtime"])
def test_plugin_whose_load_returns_junk(plugins, result):
    class Junk(RefPlugin):
        @hookimpl
        def ember_backend_load(self, device_type):
            return result

    plugins(("ref", Junk()))
    with pytest.raises(DeviceUnavailableError, match="must return a dict with 'runtime'"):
        ember.ones(1, device="ref")


class _NoInfo:
    @hookimpl
    def ember_backend_load(self, device_type):
        return {"runtime": None, "kernels": {}}


class _WrongSignature(RefPlugin):
    @hookimpl
    def ember_backend_load(self, device):  # the spec's argument is device_type
        return {}


@pytest.mark.parametrize(
    "plugin, cause",
    [
        (_NoInfo(), "AttributeError: plugin 'bad' does not implement ember_backend_info()"),
        (_WrongSignature(), "PluginValidationError"),
    ],
    ids=["no-info-hook", "wrong-signature"],
)
def test_malformed_plugins_are_recorded(plugins, plugin, cause):
    reg = plugins(("bad", plugin))
    record = _record(reg, "bad")
    assert record.error.startswith(cause)
    assert "Traceback" in record.error_detail
    assert ember.ones(1).tolist() == [1.0]


def test_plugin_missing_copy_kernel_is_unusable(plugins):
    plugins(("ref", RefPlugin(kernels={"fill_": fakes.REF_KERNELS["fill_"]})))
    with pytest.raises(DeviceUnavailableError, match=r"ref: missing required kernels \['copy_'\]"):
        ember.ones(1, device="ref")


def test_broken_installed_plugin_does_not_break_import(tmp_path):
    """The real stevedore path: an installed entry point whose module fails to import."""
    (tmp_path / "broken_backend.py").write_text("import no_such_native_module\n")
    dist = tmp_path / "broken_backend-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-backend\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ember.backends]\nbroken = broken_backend\n")
    script = textwrap.dedent(
        """
        import ember
        from ember.dispatcher.devices import REGISTRY
        print((ember.ones(2) + 1).tolist())
        record = [r for r in REGISTRY.host.records("ember.backends") if r.name == "broken"][0]
        print(record.distribution, record.version, record.error)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(tmp_path), EMBER_BACKEND_AUTOLOAD="1")
    env.pop("EMBER_PLUGINS_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[2.0, 2.0]"
    assert lines[1] == (
        "broken-backend 0.1 ModuleNotFoundError: No module named 'no_such_native_module'"
    )


def test_discovery_is_guarded_against_reentry(plugins):
    seen = []

    class Reentrant(RefPlugin):
        @hookimpl
        def ember_backend_info(self):
            from ember.dispatcher.devices import REGISTRY

            seen.append(REGISTRY.host.records(BACKENDS_GROUP))
            return super().ember_backend_info()

    reg = plugins(("ref", Reentrant()))
    assert _record(reg, "ref").ok
    assert seen == [[]]


# ---- several plugins for one device type -------------------------------------------------
def test_highest_declared_priority_wins(plugins):
    low, high = RefPlugin("low", priority=10), RefPlugin("high", priority=20)
    reg = plugins(("low", low), ("high", high))
    assert [r.name for _, r in reg.candidates("ref")] == ["high", "low"]
    assert reg.backend("ref").name == "high"
    assert reg.backend("ref").priority == 20
    assert low.loaded == []  # never initialised: the first candidate loaded


def test_policy_priority_overrides_declared(plugins):
    low, high = RefPlugin("low", priority=10), RefPlugin("high", priority=20)
    policy = fakes.policy({"backends": {"low": {"priority": 30}}})
    reg = plugins(("low", low), ("high", high), policy=policy)
    assert reg.backend("ref").name == "low"
    assert reg.backend("ref").priority == 30
    assert high.loaded == []


def test_next_candidate_serves_when_the_best_fails_to_load(plugins):
    low = RefPlugin("low", priority=10)
    high = RefPlugin("high", priority=20, load_error=OSError("no device found"))
    reg = plugins(("low", low), ("high", high))
    assert ember.ones(2, device="ref").tolist() == [1.0, 1.0]
    assert reg.backend("ref").name == "low"
    assert high.loaded == ["ref"] and low.loaded == ["ref"]


def test_every_candidate_failing_lists_every_reason(plugins):
    plugins(
        ("low", RefPlugin("low", priority=1, load_error=OSError("driver too old"))),
        ("high", RefPlugin("high", priority=2, kernels={})),
    )
    with pytest.raises(DeviceUnavailableError) as info:
        ember.ones(1, device="ref")
    message = str(info.value)
    assert "high: missing required kernels ['copy_']" in message
    assert "low: OSError: driver too old" in message
    assert message.index("high:") < message.index("low:")


def test_disabled_plugin_is_skipped_and_named(plugins):
    low, high = RefPlugin("low", priority=10), RefPlugin("high", priority=20)
    reg = plugins(
        ("low", low),
        ("high", high),
        policy=fakes.policy({"backends": {"high": {"enabled": False}}}),
    )
    assert reg.backend("ref").name == "low"
    plugins(("high", high), policy=fakes.policy({"backends": {"high": {"enabled": False}}}))
    with pytest.raises(DeviceUnavailableError, match=r"disabled by plugins.toml: high"):
        ember.ones(1, device="ref")


def test_unknown_device_type_lists_the_available_ones(plugins):
    plugins(("ref", RefPlugin()))
    with pytest.raises(DeviceUnavailableError, match=r"available device types: cpu, ref"):
        ember.ones(1, device="tpu")


def test_device_index_is_checked_against_the_count(plugins):
    plugins(("ref", RefPlugin()))
    assert ember.ones(1, device=ember.device("ref", 0)).device == "ref:0"
    with pytest.raises(RuntimeError, match=r"ref:3 is not available: ref found 1 ref device"):
        ember.ones(1, device="ref:3")


# ---- the policy: user file and environment ------------------------------------------------------
def test_user_config_is_merged_over_the_default(tmp_path):
    user = tmp_path / "plugins.toml"
    user.write_text("[fallback]\ncpu = false\n\n[backends.ref]\npriority = 5\nenabled = false\n")
    policy = Policy.load({"EMBER_PLUGINS_CONFIG": str(user)})
    assert policy.sources[-1] == str(user)
    assert policy.priority("ref", 50) == 5
    assert not policy.enabled("ref")
    assert not policy.cpu_fallback("ref")
    assert policy.warn_fallback  # keys the user file does not name keep their defaults
    assert policy.priority("cuda", None) == 100
    assert policy.autoload


@pytest.mark.parametrize("content", [None, "[fallback\ncpu = "], ids=["missing", "bad-toml"])
def test_unreadable_user_config_names_the_variable(tmp_path, content):
    user = tmp_path / "plugins.toml"
    if content is not None:
        user.write_text(content)
    with pytest.raises(RuntimeError, match=r"EMBER_PLUGINS_CONFIG=.*plugins.toml"):
        Policy.load({"EMBER_PLUGINS_CONFIG": str(user)})


def test_user_config_from_the_environment_drives_the_registry(plugins, tmp_path, monkeypatch):
    user = tmp_path / "mine.toml"
    user.write_text("[backends.low]\npriority = 99\n\n[fallback]\ncpu = false\n")
    monkeypatch.setenv("EMBER_PLUGINS_CONFIG", str(user))
    low, high = RefPlugin("low", priority=10), RefPlugin("high", priority=20)
    reg = plugins(("low", low), ("high", high), policy=Policy.load())
    assert reg.backend("ref").name == "low"
    with pytest.raises(NotImplementedError, match="CPU fallback is off"):
        ember.ones(1, device="ref") + 1


@pytest.mark.parametrize(
    "value, autoload",
    [("0", False), ("false", False), ("OFF", False), ("no", False), ("1", True), ("", True)],
)
def test_autoload_environment_variable(value, autoload):
    assert Policy.load({"EMBER_BACKEND_AUTOLOAD": value}).autoload is autoload


def test_autoload_off_discovers_nothing_but_keeps_in_process_plugins(plugins, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("entry points must not be scanned with autoload off")

    monkeypatch.setattr(plugins_mod, "ExtensionManager", refuse)
    policy = Policy.load({"EMBER_BACKEND_AUTOLOAD": "0"})
    reg = plugins(discover=True, policy=policy)
    assert reg.host.records(BACKENDS_GROUP) == []
    with pytest.raises(DeviceUnavailableError, match="EMBER_BACKEND_AUTOLOAD"):
        reg.backend("cpu")
    plugins(("ref", RefPlugin()), policy=policy)
    assert ember.ones(2, device="ref").tolist() == [1.0, 1.0]


def test_extension_helper_builds_an_in_memory_extension():
    plugin = RefPlugin()
    ext = extension("ref", plugin)
    assert ext.name == "ref" and ext.plugin is plugin and ext.entry_point is None


def test_fallback_warning_points_at_the_callers_line(plugins):
    plugins(("ref", RefPlugin()))
    x = ember.ones(2, device="ref")
    with pytest.warns(registry.PerformanceWarning) as caught:
        x.neg()
    assert caught[0].filename == __file__
