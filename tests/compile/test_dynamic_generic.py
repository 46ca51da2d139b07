"""Size-generic compiled programs (compiler/replay_dynamic.py, sizes.py, the CPU plugin's
fused_sizes.py): one compile serves every size of a dynamic dim with the fused program, its
buffers sized per call and its fused kernels taking the sizes per call."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import logs


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _fuses(device, rows=False) -> bool:
    """Whether the device's generator takes a description's dynamic dims: every generator
    for an elementwise chain, the CPU's for a row kernel."""
    return device == "cpu" if rows else device in ("cpu", "xpu", "cuda")


def _weights(device, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    return arrays, [ember.tensor(a, device=device) for a in arrays]


def _mlp(lib, x, w1, b1, w2, b2):
    f = lib.nn.functional
    h = f.gelu(f.linear(x, w1, b1)) * 0.5 + 1.0
    return (f.linear(h, w2, b2) + x).tanh() * 2


def _generic(compiled):
    """The dynamic region's generic program (None: not built or refused)."""
    regions = [e.region for entries in compiled._cache.values() for e in entries]
    found = [r for r in regions if hasattr(r, "generic")]
    return found[-1].generic if found else None


def _check(out, ours, theirs, tol=1e-12):
    np.testing.assert_allclose(out.cpu().numpy(), ours.cpu().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(out.cpu().numpy(), theirs.numpy(), rtol=tol, atol=tol)


def test_mlp_one_compile_fused_at_every_batch(device, capsys):
    arrays, params = _weights(device, (48, 16), (48,), (16, 48), (16,))
    compiled = ember.compile(lambda *a: _mlp(ember, *a), dynamic=True)
    logs.set_logs(fusion=True, recompiles=True)
    try:
        with ember.no_grad():
            for n in (8, 5, 13, 3, 40, 2, 5):
                x = np.random.default_rng(n).standard_normal((n, 16))
                ours = ember.tensor(x, device=device)
                out = compiled(ours, *params)
                theirs = _mlp(torch, torch.tensor(x), *map(torch.tensor, arrays))
                _check(out, _mlp(ember, ours, *params), theirs)
    finally:
        logs.set_logs(fusion=False, recompiles=False)
    assert compiled._count == 1
    err = capsys.readouterr().err
    assert "one size-generic program for every size" in err
    program = _generic(compiled)
    assert program is not None and "_s0 = " in program.source
    if _fuses(device):  # the generic program's chains are the fused kernels
        assert program.source.count("FUSED") == 2, program.source
        assert "sizes per call in dims [0]" in err
    else:
        assert "FUSED" not in program.source


def test_automatic_dynamic_compiles_twice_as_torch(device):
    """Ten batch sizes: ember compiles the first size, then the dynamic graph, whose generic
    program then serves every size; torch.compile makes as many graphs."""
    arrays, params = _weights(device, (48, 16), (48,), (16, 48), (16,))
    compiled = ember.compile(lambda *a: _mlp(ember, *a))
    torch._dynamo.reset()
    counts = torch._dynamo.utils.counters
    counts.clear()
    theirs = torch.compile(lambda *a: _mlp(torch, *a), backend="eager")
    with ember.no_grad(), torch.no_grad():
        for n in range(2, 12):
            x = np.random.default_rng(n).standard_normal((n, 16))
            out = compiled(ember.tensor(x, device=device), *params)
            ref = theirs(torch.tensor(x), *map(torch.tensor, arrays))
            np.testing.assert_allclose(out.cpu().numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    assert compiled._count == 2 == counts["stats"]["unique_graphs"]
    assert _generic(compiled) is not None


def _block(lib, x, w, b, g, beta):
    """A transformer-ish block over [B, T, C]: a projection of the flattened tokens, a causal
    softmax over T, a residual layer norm."""
    f = lib.nn.functional
    B, T, C = x.shape
    h = f.linear(x.reshape(B * T, C), w, b).view(B, T, C)
    scores = (h @ x.transpose(1, 2)) * 0.25
    att = f.softmax(scores, -1)
    return f.layer_norm(att @ x + f.gelu(h), (C,), g, beta, 1e-5)


def test_two_dynamic_dims_and_a_product(device, capsys):
    """B and T marked dynamic; ``reshape(B * T, C)`` is a product of the two; the softmax's
    rows are T long (a row kernel's row length is not generic on the CPU: op by op)."""
    arrays, params = _weights(device, (8, 8), (8,), (8,), (8,))
    compiled = ember.compile(lambda *a: _block(ember, *a))
    logs.set_logs(recompiles=True)
    try:
        with ember.no_grad():
            for bt in ((2, 3), (3, 5), (4, 4), (2, 7), (5, 2)):
                x = np.random.default_rng(sum(bt)).standard_normal((*bt, 8))
                ours = ember.tensor(x, device=device)
                ember._dynamo.mark_dynamic(ours, 0)
                ember._dynamo.mark_dynamic(ours, 1)
                out = compiled(ours, *params)
                theirs = _block(torch, torch.tensor(x), *map(torch.tensor, arrays))
                _check(out, _block(ember, ours, *params), theirs)
    finally:
        logs.set_logs(recompiles=False)
    assert compiled._count == 1
    program = _generic(compiled)
    assert program is not None, capsys.readouterr().err
    assert "_s0 * _s1" in program.source


def test_shapes_equal_only_at_the_captured_size_are_not_fused_together(device, capsys):
    """Captured at a batch of 6 with a [6, 6] weight: ``x * w`` and ``x + b`` have one shape
    there only; the generic program broadcasts by the expressions, not the numbers."""
    rng = np.random.default_rng(3)
    w, b = rng.standard_normal((1, 6)), rng.standard_normal((6, 6))

    def fn(lib, x, w, b):
        return (x * w).tanh() + b[:1] * x

    ours = [ember.tensor(a, device=device) for a in (w, b)]
    compiled = ember.compile(lambda *a: fn(ember, *a), dynamic=True)
    logs.set_logs(fusion=True)
    try:
        with ember.no_grad():
            for n in (6, 4, 9, 6, 11):
                x = rng.standard_normal((n, 6))
                out = compiled(ember.tensor(x, device=device), *ours)
                theirs = fn(torch, torch.tensor(x), torch.tensor(w), torch.tensor(b))
                np.testing.assert_allclose(out.cpu().numpy(), theirs.numpy(), rtol=1e-12)
    finally:
        logs.set_logs(fusion=False)
    assert _generic(compiled) is not None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_row_kernels_with_a_dynamic_row_count(device, dtype, capsys):
    """softmax and layer_norm chains over rows whose count changes: one kernel each."""

    def fn(lib, x, r):
        f = lib.nn.functional
        return f.softmax(x * 0.5 + r, -1), f.layer_norm(x + r, (x.shape[-1],))

    compiled = ember.compile(lambda *a: fn(ember, *a), dynamic=True)
    rng = np.random.default_rng(1)
    logs.set_logs(fusion=True)
    try:
        with ember.no_grad():
            for n in (4, 7, 2, 30, 3):
                x, r = rng.standard_normal((n, 3, 37)).astype(dtype), rng.standard_normal(37)
                r = r.astype(dtype)
                ours = compiled(ember.tensor(x, device=device), ember.tensor(r, device=device))
                theirs = fn(torch, torch.tensor(x), torch.tensor(r))
                tol = 1e-12 if dtype == np.float64 else 2e-5
                for a, t in zip(ours, theirs):
                    np.testing.assert_allclose(a.cpu().numpy(), t.numpy(), rtol=tol, atol=tol)
    finally:
        logs.set_logs(fusion=False)
    program = _generic(compiled)
    assert program is not None
    assert program.source.count("FUSED") == (2 if _fuses(device, rows=True) else 0)


def test_cross_entropy_forward_with_a_dynamic_batch(device):
    """The loss's fused tail (sums over every row) with a row count per call."""
    rng = np.random.default_rng(2)

    def fn(lib, x, w, target):
        return lib.nn.functional.cross_entropy(x * w, target)

    w = rng.standard_normal(11)
    compiled = ember.compile(lambda *a: fn(ember, *a), dynamic=True)
    with ember.no_grad():
        for n in (6, 9, 3, 17):
            x, t = rng.standard_normal((n, 11)), rng.integers(0, 11, n)
            args = [ember.tensor(x, device=device), ember.tensor(w, device=device)]
            out = compiled(*args, ember.tensor(t, device=device))
            theirs = fn(torch, torch.tensor(x), torch.tensor(w), torch.tensor(t))
            np.testing.assert_allclose(out.cpu().numpy(), theirs.numpy(), rtol=1e-12)


def test_cpu_kernel_source_is_the_same_at_every_size():
    """The CPU generator's source for a description with dynamic dims does not hold the
    captured size: one built kernel serves every size."""
    from ember.compiler.fusion import FusedInput, FusedKernel, FusedStep, _strides

    kernel = pytest.importorskip("ember_backend_cpu.fused").kernel

    def description(n):
        shape = (n, 5, 7)
        inputs = tuple(
            FusedInput("float64", s, _strides(s, shape)) for s in (shape, shape[1:], shape[2:])
        )
        steps = (
            FusedStep("mul", (("input", 0), ("input", 1)), "float64"),
            FusedStep("add", (("step", 0), ("input", 2)), "float64"),
            FusedStep("tanh", (("step", 1),), "float64"),
        )
        return FusedKernel("cpu", shape, "float64", inputs, steps, (1, 2), dynamic=(0,))

    first, second = kernel(description(4)), kernel(description(9))
    assert first.source == second.source and first.dynamic == (0,)
    for n in (4, 2, 3000):
        x, w, b = ember.randn(n, 5, 7, dtype=ember.float64), ember.randn(5, 7), ember.randn(7)
        w, b = w.double(), b.double()
        outs = [ember.empty((n, 5, 7), dtype=ember.float64) for _ in range(2)]
        first(*outs, x, w, b)
        assert np.array_equal(outs[0].numpy(), (x * w + b).numpy())
        assert np.array_equal(outs[1].numpy(), (x * w + b).tanh().numpy())
    x = ember.randn(1, 5, 7, dtype=ember.float64)  # size 1 merges dims: the compiler specialises it
    with pytest.raises(ValueError, match="built for sizes like"):
        first(x, x, x, w[0], b)


def test_a_region_that_draws_or_writes_is_not_probed(capsys):
    """Dropout in training mode and batch norm's running statistics: the probes would draw
    random numbers or update the statistics, so such a region keeps its dispatching replay;
    its results and statistics stay eager's."""
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.BatchNorm1d(6))
    twin = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.BatchNorm1d(6))
    twin.load_state_dict(model.state_dict())
    compiled = ember.compile(model, dynamic=True)
    logs.set_logs(recompiles=True)
    try:
        with ember.no_grad():
            for n in (5, 7, 3, 9):
                x = ember.randn(n, 4, dtype=ember.float32)
                np.testing.assert_allclose(compiled(x).numpy(), twin(x).numpy(), rtol=1e-6)
    finally:
        logs.set_logs(recompiles=False)
    assert "no size-generic program: the graph writes or draws" in capsys.readouterr().err
    np.testing.assert_allclose(model[1].running_mean.numpy(), twin[1].running_mean.numpy())


def test_dims_that_moved_together_are_checked_per_call():
    """x's and y's batches (an outer product over both) changed together at the first call at
    another size, so the program reads both from one symbol; a call where they differ runs the
    dispatching code (the program checks and returns None), not wrongly sized buffers."""

    def fn(x, y):
        return (x.unsqueeze(1) * y.unsqueeze(0)).tanh() + 1

    compiled = ember.compile(fn, dynamic=True)
    rng = np.random.default_rng(4)
    with ember.no_grad():
        for n, m in ((4, 4), (6, 6), (7, 7), (5, 3), (3, 8), (9, 9)):
            x, y = rng.standard_normal((n, 3)), rng.standard_normal((m, 3))
            out = compiled(ember.tensor(x), ember.tensor(y))
            theirs = fn(torch.tensor(x), torch.tensor(y))
            np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-12)
    assert compiled._count == 1
    program = _generic(compiled)
    assert program is not None and "return None" in program.source.split("\n")[3]
