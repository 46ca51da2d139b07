"""ember.compile's fused elementwise kernels (compiler/fusion.py, the CPU plugin's fused.py).

A compiled function is called twice without grad: the first call captures (eager results), the
second replays with the chain as one generated C kernel. Fused float64 results equal eager
ember's bit for bit (the kernel uses the eager loops' expressions); both are compared with
PyTorch. Kernels are built in a temporary cache directory, one per distinct chain.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import logs

fused_cpu = pytest.importorskip("ember_backend_cpu.fused")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _bias_gelu(lib, x, w, b, r):
    return lib.nn.functional.gelu(x * w + b) * 0.5 + r  # bias + GELU + residual add


def _tanh_where(lib, x, w, b, r):
    y = lib.nn.functional.gelu(x - b, approximate="tanh")
    return lib.where(x > 0, lib.exp(y) - 1, lib.sigmoid(y) * 2) + lib.relu(r)


def _the_rest(lib, x, w, b, r):
    y = lib.maximum(x, r).pow(2.0) / 3 - lib.minimum(x, w).neg().tanh()
    return y + lib.log(r * r + 1) - lib.sqrt(x * x + 2)


def _reused(lib, x, w, b, r):
    z = x * w + b  # read three times, all inside the chain that follows
    return lib.where(x > 0, z, -z) * lib.sigmoid(z)


CHAINS = {
    "bias_gelu": _bias_gelu,
    "tanh_where": _tanh_where,
    "the_rest": _the_rest,
    "reused": _reused,
}


def _inputs(dtype, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(6, 40), (40,), (1, 40), (6, 40)]  # x, w (broadcast row), b, residual
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _replayed(fn, args):
    """The compiled function's second (replayed) result, and its replay program's source."""
    compiled = ember.compile(fn)
    with ember.no_grad():
        compiled(*args)
        out = compiled(*args)
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    return out, entry.region.fast.source


def _run(chain, arrays):
    ours = [ember.tensor(a) for a in arrays]
    eager = chain(ember, *ours)
    out, source = _replayed(lambda *a: chain(ember, *a), ours)
    theirs = chain(torch, *[torch.tensor(a) for a in arrays])
    return out, eager, theirs, source


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_float64_fused_equals_eager(name):
    out, eager, theirs, source = _run(CHAINS[name], _inputs(np.float64))
    assert source.count("FUSED") == 1 and "K(" not in source  # the whole chain, one kernel
    np.testing.assert_array_equal(out.numpy(), eager.numpy())
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["bias_gelu", "tanh_where", "the_rest"])
def test_float32_fused_matches(name):
    out, eager, theirs, source = _run(CHAINS[name], _inputs(np.float32))
    assert "FUSED" in source and out.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), eager.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_non_contiguous_input_and_log(capsys):
    x, w, b, r = _inputs(np.float64)
    xt = ember.tensor(np.ascontiguousarray(x.T)).t()  # a transposed view
    args = [xt, ember.tensor(w), ember.tensor(b), ember.tensor(r)]
    logs.set_logs(fusion=True)
    try:
        out, source = _replayed(lambda *a: _bias_gelu(ember, *a), args)
    finally:
        logs.set_logs(fusion=False)
    assert "FUSED" in source
    np.testing.assert_array_equal(out.numpy(), _bias_gelu(ember, *args).numpy())
    err = capsys.readouterr().err
    assert "1 elementwise chain(s) to fuse" in err  # the capture's plan
    assert "fused: mul, add, gelu, mul, add (4 inputs, float64 [6, 40]" in err  # the replay's


def test_hook_returning_none_replays_op_by_op(monkeypatch, capsys):
    monkeypatch.setattr(fused_cpu, "kernel", lambda description: None)
    arrays = _inputs(np.float64, seed=1)
    logs.set_logs(fusion=True)
    try:
        out, eager, _theirs, source = _run(_bias_gelu, arrays)
    finally:
        logs.set_logs(fusion=False)
    assert "FUSED" not in source
    np.testing.assert_array_equal(out.numpy(), eager.numpy())
    assert "backend 'cpu' returned no kernel; runs op by op" in capsys.readouterr().err


def test_what_is_not_fused_says_why():
    def fn(x, i):
        return (x * 2).sum() + (i + 1).sum()  # x*2 alone before a reduction; int64

    x, i = ember.randn(8, dtype=ember.float64), ember.arange(8)
    text = str(ember._dynamo.explain(fn)(x, i))
    assert "0 elementwise chain(s)" in text
    assert "ember::add: int64 (fusion takes float32/float64)" in text
    assert "ember::mul: alone" in text


def test_disk_cache_is_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path))
    monkeypatch.setattr(fused_cpu, "_LOADED", {})  # built here, not found in this process
    x, w, b, r = [ember.tensor(a) for a in _inputs(np.float64, seed=2)]
    _out, source = _replayed(lambda *a: _bias_gelu(ember, *a), [x, w, b, r])
    assert "FUSED" in source
    built = sorted(p.name for p in tmp_path.glob("fused-*.so"))
    assert len(built) == 1  # keyed by the hash of source, flags, compiler and CPU
    # as a new process would: nothing loaded in memory, and building again is an error
    monkeypatch.setattr(fused_cpu, "_LOADED", {})
    monkeypatch.setattr(fused_cpu, "_compile_library", lambda *a: pytest.fail("recompiled"))
    out, _ = _replayed(lambda *a: _bias_gelu(ember, *a), [x, w, b, r])
    np.testing.assert_array_equal(out.numpy(), _bias_gelu(ember, x, w, b, r).numpy())
    assert sorted(p.name for p in tmp_path.glob("fused-*.so")) == built


def test_no_compiler_falls_back(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-compiler-ember")
    fused_cpu._toolchain.cache_clear()
    try:
        arrays = _inputs(np.float64, seed=3)
        out, eager, _theirs, source = _run(_bias_gelu, arrays)
    finally:
        fused_cpu._toolchain.cache_clear()
    assert "FUSED" not in source
    np.testing.assert_array_equal(out.numpy(), eager.numpy())


def test_training_region_keeps_its_path():
    arrays = _inputs(np.float64)
    ours = [ember.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    compiled = ember.compile(lambda *a: _bias_gelu(ember, *a))
    for _ in range(2):
        out = compiled(*ours)
    out.sum().backward()
    _bias_gelu(torch, *theirs).sum().backward()
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_description_in_op_table_names():
    from ember.compiler import fusion

    x, w, b, r = [ember.tensor(a) for a in _inputs(np.float32)]
    out = ember._dynamo.explain(lambda *a: _bias_gelu(ember, *a))(x, w, b, r)
    graph = out.graphs[0]
    chains, _ = fusion.plan(list(graph.block().nodes()), graph.outputs())
    d = fusion.describe(chains[0])
    assert [s.op for s in d.steps] == ["mul", "add", "gelu", "mul", "add"]
    assert d.steps[2].params == {"approximate": "none"} and d.steps[3].args[1] == ("scalar", 0.5)
    assert [i.strides for i in d.inputs] == [(40, 1), (0, 1), (0, 1), (40, 1)]
    assert (d.shape, d.dtype, d.outputs) == ((6, 40), "float32", (4,))
