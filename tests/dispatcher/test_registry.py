"""Kernel resolution: memoised lookup, kernels added by op libraries, ``registry.explain``."""

from __future__ import annotations

import plugin_fakes as fakes
import pytest
from plugin_fakes import RefPlugin

import ember
from ember.dispatcher import registry
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.optable import OPS
from ember.dispatcher.registry import ExtraKernels

f32 = ember.float32


@pytest.fixture
def extra(monkeypatch):
    """A fresh table of extra kernels, and no memoised kernels before or after."""
    table = ExtraKernels()
    monkeypatch.setattr(registry, "EXTRA", table)
    REGISTRY.reset()
    yield table
    monkeypatch.undo()
    REGISTRY.reset()


def _counting_resolve(monkeypatch) -> list:
    calls: list = []
    real = registry.resolve

    def resolve(op, device_type, dtype):
        calls.append((op.name, device_type, dtype))
        return real(op, device_type, dtype)

    monkeypatch.setattr(registry, "resolve", resolve)
    return calls


def test_kernel_lookup_is_memoised(extra, monkeypatch):
    calls = _counting_resolve(monkeypatch)
    op = OPS["add"]
    first = op.kernel("cpu", f32)
    assert op.kernel("cpu", f32) is first
    assert op.kernels[("cpu", f32)] is first
    assert first is REGISTRY.backend("cpu").kernels["add"]["float32"]
    (ember.ones(2) + 1).tolist()  # calls reuse the memo too
    assert [c for c in calls if c[0] == "add"] == [("add", "cpu", f32)]


def test_decomposition_is_memoised_as_none(extra, monkeypatch):
    calls = _counting_resolve(monkeypatch)
    op = OPS["mean"]
    assert op.decomposition is not None
    assert op.kernel("cpu", f32) is None
    assert op.kernel("cpu", f32) is None
    assert calls == [("mean", "cpu", f32)]


def test_missing_kernel_is_not_memoised(plugins):
    plugins(("ref", RefPlugin()), policy=fakes.policy({"fallback": {"cpu": False}}))
    op = OPS["neg"]
    for _ in range(2):
        with pytest.raises(NotImplementedError, match="'neg' is not implemented"):
            op.kernel("ref", f32)
    assert ("ref", f32) not in op.kernels


def test_fallback_wrapper_is_memoised(plugins):
    plugins(("ref", RefPlugin()))
    op = OPS["neg"]
    kernel = op.kernel("ref", f32)
    assert kernel.__qualname__ == "cpu_fallback[neg]"
    assert op.kernel("ref", f32) is kernel


# ---- extra kernels -------------------------------------------------------------------------
def _kernel(tag):
    def fn(*args):
        return tag

    fn.__qualname__ = f"kernel_{tag}"
    return fn


def test_conflicting_providers_are_named(extra):
    extra.add("myop", "cpu", {"float32": _kernel("a")}, "lib_a")
    with pytest.raises(RuntimeError) as info:
        extra.add("myop", "cpu", {"float64": _kernel("b2"), "float32": _kernel("b")}, "lib_b")
    assert str(info.value) == (
        "kernel for 'myop' on cpu (float32) is registered by both 'lib_a' and 'lib_b' "
        "(give one a higher priority to prefer it)"
    )
    assert extra.find("myop", "cpu", "float64") is None  # nothing of the refused table was kept


def test_different_dtypes_from_two_providers_coexist(extra):
    a, b = _kernel("a"), _kernel("b")
    extra.add("myop", "cpu", {"float32": a}, "lib_a")
    extra.add("myop", "cpu", {"float64": b}, "lib_b")
    assert extra.find("myop", "cpu", "float32") == (0, "lib_a", a)
    assert extra.find("myop", "cpu", "float64") == (0, "lib_b", b)
    assert extra.find("myop", "cpu", "int64") is None
    assert extra.find("myop", "cuda", "float32") is None
    assert extra.device_types("myop") == {"cpu"}


def test_same_function_again_is_a_no_op(extra):
    fn = _kernel("a")
    extra.add("myop", "cpu", {"float32": fn}, "lib_a")
    extra.add("myop", "cpu", {"float32": fn}, "lib_a")
    extra.add("myop", "cpu", {"float32": fn}, "lib_b")  # the same function is no conflict
    assert extra.find("myop", "cpu", "float32") == (0, "lib_a", fn)
    assert [p for _, p, _ in extra.entries[("myop", "cpu")]] == ["lib_a", "lib_b"]
    extra.add("myop", "cpu", {"float32": fn}, "lib_a")
    assert len(extra.entries[("myop", "cpu")]) == 2


def test_provider_registering_again_updates_its_kernels(extra):
    old, new, other = _kernel("old"), _kernel("new"), _kernel("f64")
    extra.add("myop", "cpu", {"float32": old}, "lib_a")
    extra.add("myop", "cpu", {"float64": other}, "lib_a")
    extra.add("myop", "cpu", {"float32": new}, "lib_a")
    assert extra.find("myop", "cpu", "float32")[2] is new
    assert extra.find("myop", "cpu", "float64")[2] is other


def test_wildcard_and_priority(extra):
    star, exact = _kernel("star"), _kernel("exact")
    extra.add("myop", "cpu", {"*": star}, "generic")
    extra.add("myop", "cpu", {"float32": exact}, "fast", priority=5)
    assert extra.find("myop", "cpu", "float32") == (5, "fast", exact)
    assert extra.find("myop", "cpu", "int8") == (0, "generic", star)


def test_extra_kernel_beats_the_backend_only_with_higher_priority(extra):
    op = OPS["neg"]
    native = REGISTRY.backend("cpu").kernels["neg"]["float32"]
    mine = _kernel("mine")
    extra.add("neg", "cpu", {"float32": mine}, "lib", priority=-1)
    assert registry.find_kernel(op, "cpu", f32) == (native, "cpu kernel")
    extra.add("neg", "cpu", {"float32": mine}, "lib", priority=1)  # same provider, new priority
    assert registry.find_kernel(op, "cpu", f32) == (mine, "lib kernel")


def test_adding_a_kernel_forgets_the_memo(extra):
    op = OPS["neg"]
    native = op.kernel("cpu", f32)
    replacement = _kernel("mine")
    extra.add("neg", "cpu", {"float32": replacement}, "lib", priority=1)
    assert op.kernel("cpu", f32) is replacement
    assert native is not replacement


def test_extra_kernel_serves_a_device_without_one(plugins, monkeypatch):
    monkeypatch.setattr(registry, "EXTRA", ExtraKernels())
    plugins(("ref", RefPlugin()), policy=fakes.policy({"fallback": {"cpu": False}}))

    def neg(out, x):
        fakes.host_view(out)[...] = -fakes.host_view(x)

    registry.EXTRA.add("neg", "ref", {"float32": neg}, "my_ops")
    assert (-ember.ones(2, device="ref")).tolist() == [-1.0, -1.0]
    with pytest.raises(
        NotImplementedError, match=r"Implemented by: cpu .*; my_ops \(ref: float32\)"
    ):
        -ember.ones(2, dtype=ember.float64, device="ref")


# ---- explain ------------------------------------------------------------------------------------
def test_explain_native_core_and_decomposition():
    assert registry.explain(OPS["add"], "cpu", f32) == "add(cpu float32): native cpu kernel cpu.add"
    assert registry.explain(OPS["view"], "cpu", f32) == (
        "view: implemented by the ember core for every device (no kernel needed)"
    )
    assert registry.explain(OPS["mean"], "cpu", f32) == (
        "mean(cpu float32): no kernel; runs its decomposition into other ops"
    )


def test_missing_cpu_kernel_does_not_blame_the_fallback_policy(extra):
    op = OPS["neg"]
    backend = REGISTRY.backend("cpu")
    message = registry._missing_message(op, "cpu", f32, backend)
    assert message.startswith("'neg' is not implemented for device 'cpu' and dtype float32")
    assert "fallback" not in message


def test_explain_fallback_and_missing(plugins):
    plugins(("ref", RefPlugin()))
    assert registry.explain(OPS["exp"], "ref", f32) == (
        "exp(ref float32): no ref kernel; CPU fallback (plugins.toml allows it)"
    )
    assert registry.explain(OPS["copy_"], "ref", f32).startswith(
        "copy_(ref float32): native ref kernel copy_"
    )
    plugins(("ref", RefPlugin()), policy=fakes.policy({"fallback": {"cpu": False}}))
    text = registry.explain(OPS["exp"], "ref", f32)
    assert text.startswith("exp(ref float32): NOT IMPLEMENTED. 'exp' is not implemented")
    assert "CPU fallback is off" in text
