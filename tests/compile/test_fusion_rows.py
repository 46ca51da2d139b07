"""Fusion beyond elementwise chains (compiler/fusion.py, the CPU plugin's fused.py): chains that
end in a row op over the last dim (sum/mean/amax, softmax, log_softmax, layer_norm), chains that
store several values, and fusion inside training regions (the joint forward and backward
programs, compiler/joint.py). Values and float64 gradients are compared with PyTorch; the
programs' sources show that the kernels were fused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import fusion

fused_cpu = pytest.importorskip("ember_backend_cpu.fused")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _f(lib):
    return lib.nn.functional


ROWS = {  # (fn(lib, x, w, b, r), the chain's ops)
    "sum": (lambda lib, x, w, b, r: (x * w + b).sum(-1), "mul, add, sum"),
    "sum_keepdim": (lambda lib, x, w, b, r: lib.exp(x - r).sum(-1, keepdim=True), "sub, exp, sum"),
    "mean": (lambda lib, x, w, b, r: (x * x + r).mean(-1), "mul, add, mean"),
    "amax": (
        lambda lib, x, w, b, r: lib.amax(lib.tanh(x) * w, -1, keepdim=True),
        "tanh, mul, amax",
    ),
    "softmax": (lambda lib, x, w, b, r: _f(lib).softmax(x * 0.125 + r, -1), "mul, add, softmax"),
    "log_softmax": (
        lambda lib, x, w, b, r: _f(lib).log_softmax(x - b, dim=2),
        "sub, log_softmax",
    ),
    "layer_norm": (
        lambda lib, x, w, b, r: _f(lib).layer_norm(x + r, (x.shape[-1],), w, b[0], 1e-5),
        "add, layer_norm",
    ),
    "bias_gelu_mean": (
        lambda lib, x, w, b, r: _f(lib).gelu(x + b).mean(-1, keepdim=True),
        "add, gelu, mean",
    ),
}


def _inputs(dtype, seed=0, shape=(3, 5, 40)):
    rng = np.random.default_rng(seed)
    shapes = [shape, shape[-1:], (1, shape[-1]), shape]  # x, w (a row), b, residual
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _source(compiled) -> str:
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    return entry.region.fast.source


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(ROWS))
def test_row_chain_matches_torch(name, dtype):
    fn, ops = ROWS[name]
    arrays = _inputs(dtype)
    ours = [ember.tensor(a) for a in arrays]
    compiled = ember.compile(lambda *a: fn(ember, *a))
    with ember.no_grad():
        compiled(*ours)
        out = compiled(*ours)  # the replay
    source = _source(compiled)
    assert source.count("FUSED") == 1 and "K(" not in source  # the chain and its row op: one call
    want = fn(torch, *[torch.tensor(a) for a in arrays])
    assert tuple(out.shape) == tuple(want.shape) and str(out.dtype)[6:] == str(want.dtype)[6:]
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=tol, atol=tol)
    text = str(ember._dynamo.explain(lambda *a: fn(ember, *a))(*ours))
    assert f"chain: {ops}" in text


def test_row_chains_over_the_threads():
    """51200 elements: the generated kernel splits the rows between OpenMP threads."""
    arrays = _inputs(np.float64, seed=6, shape=(16, 50, 64))
    ours = [ember.tensor(a) for a in arrays]
    for name, (fn, _ops) in sorted(ROWS.items()):
        compiled = ember.compile(lambda *a, fn=fn: fn(ember, *a))
        with ember.no_grad():
            compiled(*ours)
            out = compiled(*ours)
        assert "FUSED" in _source(compiled), name
        want = fn(torch, *[torch.tensor(a) for a in arrays]).numpy()
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_row_ops_keep_nan_and_inf():
    x = np.random.default_rng(1).standard_normal((1, 4, 9))
    x[0, 1, 3], x[0, 2, 0], x[0, 3, 8] = np.nan, np.inf, -np.inf
    for name in ("amax", "softmax", "log_softmax", "sum"):
        fn = ROWS[name][0]
        w, b, r = np.ones(9), np.zeros((1, 9)), np.zeros((1, 4, 9))
        compiled = ember.compile(lambda *a, fn=fn: fn(ember, *a))
        ours = [ember.tensor(a) for a in (x, w, b, r)]
        with ember.no_grad():
            compiled(*ours)
            out = compiled(*ours)
        want = fn(torch, *[torch.tensor(a) for a in (x, w, b, r)])
        np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-12, equal_nan=True)


def test_a_row_op_over_another_dim_is_not_fused():
    x = ember.randn(4, 6, dtype=ember.float64)
    text = str(ember._dynamo.explain(lambda x: ember.softmax(x * 2, 0))(x))
    assert "softmax over dim 0 (a trailing reduction is over the last dim)" in text


def test_several_outputs_and_values_read_twice():
    """``y`` is returned and read again by the chain: the kernel stores it and the result."""

    def fn(lib, x, w, b, r):
        y = x * w + b
        return y, lib.sigmoid(y) * y - r

    arrays = _inputs(np.float64, seed=4)
    ours = [ember.tensor(a) for a in arrays]
    compiled = ember.compile(lambda *a: fn(ember, *a))
    with ember.no_grad():
        compiled(*ours)
        got = compiled(*ours)
    source = _source(compiled)
    assert source.count("FUSED") == 1 and "K(" not in source
    for g, e, t in zip(got, fn(ember, *ours), fn(torch, *[torch.tensor(a) for a in arrays])):
        np.testing.assert_array_equal(g.numpy(), e.numpy())  # the eager loops' expressions
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def test_a_value_read_before_the_chain_ends_stays_out():
    """``a`` feeds the chain and an mm that the chain's later node reads: fusing ``a`` into
    the chain would compute it after the mm, so the plan leaves the chain at ``a``'s reader."""

    def fn(x, m):
        a = x * 2
        b = a + 1
        return b * (a @ m)

    x, m = ember.randn(4, 4, dtype=ember.float64), ember.randn(4, 4, dtype=ember.float64)
    graph = ember._dynamo.explain(fn)(x, m).graphs[0]
    nodes = list(graph.block().nodes())
    chains, _ = fusion.plan(nodes, graph.outputs())
    order = {n: i for i, n in enumerate(nodes)}
    for chain in chains:  # every value stored for an outside reader is made before it reads
        end = order[chain.nodes[-1]]
        readers = [n for n in nodes if n not in chain.nodes and set(n.inputs()) & {*chain.outputs}]
        assert all(order[n] > end for n in readers)
    compiled = ember.compile(fn)
    with ember.no_grad():
        compiled(x, m)
        np.testing.assert_array_equal(compiled(x, m).numpy(), fn(x, m).numpy())


def _block(lib, width=32):
    """bias + GELU, a residual layer norm and a log-softmax head: chains in the forward
    program and in the backward's formulas."""
    up, norm = lib.nn.Linear(width, width), lib.nn.LayerNorm(width)
    model = lib.nn.ModuleDict({"up": up, "norm": norm})

    def forward(x):
        f = lib.nn.functional
        h = norm(f.gelu(up(x)) + x)
        return f.log_softmax(h * 0.5, -1), f.softmax(h * 2.0, -1).amax(-1)

    return model, forward


class _Block(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.parts, self.fn = _block(ember)

    def forward(self, x):
        return self.fn(x)


def test_training_region_fuses_forward_and_backward():
    ember.manual_seed(0)
    model = _Block().double()
    twin, twin_fn = _block(torch)
    twin = twin.double()
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.tensor(model.parts.get_parameter(name).detach().numpy()))
    compiled = ember.compile(model)
    x = np.random.default_rng(5).standard_normal((2, 6, 32))
    xt = torch.tensor(x, requires_grad=True)
    a, b = twin_fn(xt)
    (a.square().sum() + b.sum()).backward()
    for _ in range(3):  # capture, build the joint pair, run it
        model.zero_grad()
        xe = ember.tensor(x, requires_grad=True)
        a, b = compiled(xe)
        (a.square().sum() + b.sum()).backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
        for name, p in twin.named_parameters():
            got = model.parts.get_parameter(name).grad.numpy()
            np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-9, atol=1e-11)
    (entry,) = [e for es in compiled._compiled._cache.values() for e in es if e.region]
    joint = entry.region.joint
    forward, backward = joint.forward.source, joint.backward.source
    assert forward.count("FUSED") >= 3, forward  # add+gelu+add, mul+log_softmax, mul+softmax
    # the formulas' chains, with their row sums inside (test_fusion_mid.py)
    assert backward.count("FUSED") >= 1, backward


def test_training_region_replays_op_by_op_without_the_hook(monkeypatch):
    monkeypatch.setattr(fused_cpu, "kernel", lambda description: None)
    ember.manual_seed(0)
    model = _Block().double()
    eager = _Block().double()
    eager.load_state_dict(model.state_dict())
    compiled = ember.compile(model)
    x = ember.randn(3, 32, dtype=ember.float64)
    for _ in range(3):
        for m, run in ((model, compiled), (eager, eager)):
            m.zero_grad()
            a, b = run(x)
            (a.sum() + b.sum()).backward()
        for p, q in zip(model.parameters(), eager.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12, atol=1e-14)
    (entry,) = [e for es in compiled._compiled._cache.values() for e in es if e.region]
    assert "FUSED" not in entry.region.joint.forward.source + entry.region.joint.backward.source


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_softmax_rows_take_the_eager_kernels_passes(dtype):
    """A trailing softmax/log_softmax computes its max, exponentials and sums as the eager
    kernel does (csrc/nn.c, vectorised): the same bits as eager ember, causal -inf masks and
    fully masked rows included."""
    x = ember.randn(3, 4, 37, 37, dtype=dtype)
    mask = ember.zeros(37, 37, dtype=dtype).masked_fill(
        ember.ones(37, 37).triu(1).bool(), float("-inf")
    )
    mask[5] = float("-inf")  # a row with no finite entry: NaN, as eager and PyTorch
    for name in ("softmax", "log_softmax"):
        compiled = ember.compile(lambda s, m, name=name: getattr(ember, name)(s + m, -1))
        with ember.no_grad():
            compiled(x, mask)
            got = compiled(x, mask)
        (entry,) = [e for entries in compiled._cache.values() for e in entries]
        assert entry.region.fast.source.count("FUSED") == 1
        np.testing.assert_array_equal(got.numpy(), getattr(ember, name)(x + mask, -1).numpy())
        theirs = torch.tensor(x.numpy()) + torch.tensor(mask.numpy())
        want = getattr(torch, name)(theirs, -1).numpy()
        tol = 1e-12 if dtype == ember.float64 else 2e-6
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol, equal_nan=True)
