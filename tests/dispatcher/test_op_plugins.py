"""Op libraries found through the ``ember.ops`` entry-point group, built in memory: lazy loading,
and plugins that fail to import, define ops no kernel can run, or conflict with each other."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import numpy as np
import plugin_fakes as fakes
import pytest
from plugin_fakes import OpLibrary

import ember
from ember.dispatcher import plugins as plugins_mod
from ember.dispatcher.plugins import OPS_GROUP

SCHEMA = "lib::double(Tensor x) -> Tensor"


def _double(out, x):
    np.multiply(x.numpy(), 2, out=out.numpy())


def _backward(ctx, g):
    return g * 2


def _like_input(x):
    return x


def definition(**changes) -> dict:
    """A working definition of ``lib::double``; ``changes`` replace or (None) remove keys."""
    d = {
        "schema": SCHEMA,
        "kernels": {"cpu": {"float": _double}},
        "shape": _like_input,
        "backward": _backward,
        "dtypes": ["float32"],
    }
    d.update(changes)
    return {key: value for key, value in d.items() if value is not None}


def _record(reg, name):
    return next(r for r in reg.host.records(OPS_GROUP) if r.name == name)


def test_op_library_loads_on_first_access_of_its_namespace(lib, plugins):
    plugin = OpLibrary([definition()])
    reg = plugins(op_libraries=[("mine", plugin)])
    _ = ember.ones(1) + 1
    assert plugin.calls == 0  # ordinary work never loads op libraries
    x = ember.ones(3, requires_grad=True)
    y = ember.ops.lib.double(x)
    assert plugin.calls == 1
    assert y.tolist() == [2.0, 2.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    ember.ops.lib.double(x)
    assert plugin.calls == 1
    assert _record(reg, "mine").ok
    assert lib.LIBRARY.provider("lib::double") == "mine"  # in memory: no distribution name


def test_reloading_the_same_library_is_a_no_op(lib, plugins):
    plugin = OpLibrary([definition()])
    plugins(op_libraries=[("mine", plugin)])
    first = ember.ops.lib.double
    plugins(op_libraries=[("mine", plugin)])  # a new plugin host: loads again, changes nothing
    lib.load_op_libraries()
    assert plugin.calls == 2 and ember.ops.lib.double is first


def test_library_that_fails_to_import_is_reported(lib, plugins, monkeypatch):
    entry_point = EntryPoint("broken", "broken_ops:plugin", OPS_GROUP)
    monkeypatch.setattr(fakes.FakeManager, "extensions_by_group", fakes.backends())
    monkeypatch.setattr(
        fakes.FakeManager,
        "failures_by_group",
        {OPS_GROUP: [(entry_point, ImportError("No module named 'broken_native'"))]},
    )
    monkeypatch.setattr(plugins_mod, "ExtensionManager", fakes.FakeManager)
    reg = plugins(discover=True)
    with pytest.raises(AttributeError) as info:
        _ = ember.ops.broken_ns
    assert str(info.value) == (
        "ember.ops has no op or namespace 'broken_ns'; these op libraries failed to load:\n"
        "  broken (broken_ops:plugin): ImportError: No module named 'broken_native'"
    )
    assert not _record(reg, "broken").ok
    assert (ember.ones(2) * 2).tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    "plugin, cause",
    [
        (OpLibrary(error=OSError("libops.so: cannot open")), "OSError: libops.so: cannot open"),
        (OpLibrary([definition(kernels=None)]), "has no kernels and no decomposition"),
        (OpLibrary([definition(shape=None)]), "has kernels but no 'shape' rule"),
        (OpLibrary([definition(backward=None)]), "has no 'backward'; give one or set"),
        (OpLibrary([definition(schema="double(Tensor x) -> Tensor")]), "needs a namespace"),
        (OpLibrary([definition(kernel=_double)]), "unknown keys ['kernel']"),
        (OpLibrary([definition(kernels={"cpu": {"float64": _double}})]), "dtypes it excludes"),
        (OpLibrary([definition(kernels={"cpu": _double})]), "must map dtypes to functions"),
        (OpLibrary(["lib::double(Tensor x) -> Tensor"]), "must be a dict with a 'schema'"),
        (OpLibrary([definition(), definition()]), "defines ['lib::double'] more than once"),
    ],
    ids=[
        "hook-raises",
        "no-kernels",
        "no-shape",
        "no-backward",
        "no-namespace",
        "unknown-key",
        "excluded-dtype",
        "not-a-table",
        "not-a-dict",
        "twice",
    ],
)
def test_broken_definitions_are_reported_and_register_nothing(lib, plugins, plugin, cause):
    reg = plugins(op_libraries=[("bad", plugin)])
    with pytest.raises(AttributeError, match="these op libraries failed to load"):
        _ = ember.ops.lib
    record = _record(reg, "bad")
    assert cause in record.error
    assert "Traceback" in record.error_detail
    assert lib.LIBRARY.ops == {}


def test_conflicting_op_is_refused_naming_both_providers(lib, plugins):
    other = "lib::triple(Tensor x) -> Tensor"
    first = OpLibrary([definition()])
    second = OpLibrary(
        [
            definition(schema=other),  # fine alone, but the library registers as one unit
            definition(schema="lib::double(Tensor x, float k) -> Tensor"),
        ]
    )
    reg = plugins(op_libraries=[("first", first), ("second", second)])
    assert ember.ops.lib.double(ember.ones(1)).tolist() == [2.0]
    assert _record(reg, "second").error == (
        "RuntimeError: the schema of op 'lib::double' is registered by both 'first' and "
        "'second'; uninstall or disable one of them"
    )
    assert sorted(lib.LIBRARY.ops) == ["lib::double"]


def test_conflicting_kernels_are_refused_unless_priorities_differ(lib, plugins):
    def negate(out, x):
        np.negative(x.numpy(), out=out.numpy())

    same = OpLibrary([definition(kernels={"cpu": {"float32": negate}})])
    reg = plugins(op_libraries=[("first", OpLibrary([definition()])), ("second", same)])
    assert ember.ops.lib.double(ember.ones(1)).tolist() == [2.0]
    assert "kernel for 'lib::double' on cpu (float32) is registered by both 'first' and " in (
        _record(reg, "second").error
    )
    preferred = OpLibrary([definition(kernels={"cpu": {"float32": negate}}, priority=10)])
    plugins(op_libraries=[("first", OpLibrary([definition()])), ("second", preferred)])
    assert ember.ops.lib.double(ember.ones(1)).tolist() == [-1.0]
