"""Reductions in the middle of a fused chain (compiler/fusion.py, the CPU plugin's
fused_rows.py): a row statistic over the last dim (sum, mean, amax with keepdim) that later
elementwise steps read runs in the same kernel, one pass over the row per statistic. Values
are compared with PyTorch (float64 and float32, odd row lengths, non-contiguous inputs, NaN),
the replay's source proves one kernel call, and 30-step training trajectories of a compiled
model whose backward formulas hold such chains follow eager ember's and PyTorch's."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import ember
from ember.compiler import fusion

from .test_fusion import _replayed as replayed

fused_cpu = pytest.importorskip("ember_backend_cpu.fused")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _softmax_backward(lib, x, g, w):
    y = x * 0.5  # the formula's y * (g - sum(g * y, -1, keepdim=True))
    return y * (g - (g * y).sum(-1, keepdim=True))


def _scaled_by_row_sum(lib, x, g, w):
    return lib.tanh(x) * (x * w).sum(-1, keepdim=True) - g


def _layer_norm_by_hand(lib, x, g, w):  # two statistics, the second reading the first
    c = x - x.mean(-1, keepdim=True)
    return c * lib.rsqrt((c * c).mean(-1, keepdim=True) + 1e-5) * w + g


def _softmax_by_hand(lib, x, g, w):  # amax, then a sum of what reads it
    e = lib.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def _addcmul_row(lib, x, g, w):  # layer_norm's backward: a + value * b * statistic
    return lib.addcmul(g, x, (x * g).sum(-1, keepdim=True), value=-0.25) * w


def _ends_in_a_sum(lib, x, g, w):
    return (x - x.mean(-1, keepdim=True)).square().sum(-1)


def _ends_in_softmax(lib, x, g, w):
    return lib.softmax(x - x.mean(-1, keepdim=True) * g, -1)


CHAINS = {  # fn, the chain explain() reports
    "softmax_backward": (_softmax_backward, "mul, mul, sum, sub, mul"),
    "scaled_by_row_sum": (_scaled_by_row_sum, "tanh, mul, sum, mul, sub"),
    "layer_norm_by_hand": (_layer_norm_by_hand, "mean, sub, mul, mean, add, rsqrt, mul, mul, add"),
    "softmax_by_hand": (_softmax_by_hand, "amax, sub, exp, sum, div"),
    "addcmul_row": (_addcmul_row, "mul, sum, addcmul, mul"),
    "ends_in_a_sum": (_ends_in_a_sum, "mean, sub, square, sum"),
    "ends_in_softmax": (_ends_in_softmax, "mean, mul, sub, softmax"),
}


def _arrays(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in (shape, shape, shape[-1:])]


def _replayed(fn, tensors):
    return replayed(lambda *a: fn(ember, *a), tensors)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_mid_chain_reduction_is_one_kernel(name, dtype):
    fn, ops = CHAINS[name]
    arrays = _arrays(dtype, (3, 5, 37))  # an odd row length
    out, source = _replayed(fn, [ember.tensor(a) for a in arrays])
    assert source.count("FUSED") == 1 and "K(" not in source and "R(" not in source, source
    want = fn(torch, *[torch.tensor(a) for a in arrays])
    tol = 1e-12 if dtype == np.float64 else 3e-5
    assert tuple(out.shape) == tuple(want.shape) and str(out.dtype)[6:] == str(want.dtype)[6:]
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=tol, atol=tol)
    graph = ember._dynamo.explain(lambda *a: fn(ember, *a))(*[ember.tensor(a) for a in arrays])
    assert f"chain: {ops}" in str(graph)
    chains, _ = fusion.plan(list(graph.graphs[0].block().nodes()), graph.graphs[0].outputs())
    (chain,) = chains
    description = fusion.describe(chain)
    assert description.features == (fusion.ROW_STEPS,)
    assert description.shape == (3, 5, 37)
    assert any(step.row for step in description.steps[:-1])


def test_non_contiguous_inputs_and_threads():
    """Transposed inputs (copied dense for the kernel) and 53248 elements: the rows are split
    between OpenMP threads."""
    rng = np.random.default_rng(3)
    x, g = (rng.standard_normal((52, 16, 64)) for _ in range(2))
    w = rng.standard_normal(52)
    ours = [ember.tensor(x).transpose(0, 2), ember.tensor(g).transpose(0, 2), ember.tensor(w)]
    theirs = [torch.tensor(x).transpose(0, 2), torch.tensor(g).transpose(0, 2), torch.tensor(w)]
    for name, (fn, _ops) in sorted(CHAINS.items()):
        out, source = _replayed(fn, ours)
        assert "FUSED" in source, name
        want = fn(torch, *theirs).numpy()
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_statistics_keep_nan_and_inf():
    x = np.random.default_rng(1).standard_normal((4, 9))
    x[1, 3], x[2, 0], x[3, 8] = np.nan, np.inf, -np.inf
    g, w = np.ones((4, 9)), np.ones(9)
    for name in ("softmax_by_hand", "scaled_by_row_sum", "ends_in_a_sum"):
        fn = CHAINS[name][0]
        out, _ = _replayed(fn, [ember.tensor(a) for a in (x, g, w)])
        want = fn(torch, *[torch.tensor(a) for a in (x, g, w)]).numpy()
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, equal_nan=True, err_msg=name)


def test_a_generator_without_the_feature_gets_the_chains_it_knows(monkeypatch):
    """A backend generator that does not know ``row_steps`` returns None for such a chain (as
    an xpu/CUDA generator written before the feature does): the graph is planned again
    without per-row steps, so it fuses the plain chains (several kernels instead of one)."""
    monkeypatch.setattr(fused_cpu, "FEATURES", frozenset())
    fn = CHAINS["layer_norm_by_hand"][0]
    arrays = _arrays(np.float64, (4, 11), seed=2)
    out, source = _replayed(fn, [ember.tensor(a) for a in arrays])
    assert source.count("FUSED") >= 2, source
    want = fn(torch, *[torch.tensor(a) for a in arrays]).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)


def _model(lib):
    """A residual layer norm, a softmax gate and a log-softmax head: their backward formulas
    are chains with row sums in the middle."""
    torch_like = lib.nn
    return torch_like.ModuleDict(
        {"up": torch_like.Linear(24, 24), "norm": torch_like.LayerNorm(24),
         "head": torch_like.Linear(24, 7)}
    )  # fmt: skip


def _forward(lib, model, x):
    f = lib.nn.functional
    h = model["norm"](f.gelu(model["up"](x)) + x)
    h = h * f.softmax(h * 0.5, -1)
    return f.log_softmax(model["head"](h), -1)


class _Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.parts = _model(ember)

    def forward(self, x):
        return _forward(ember, self.parts, x)


def test_training_trajectory_matches_eager_and_torch():
    """30 SGD steps in float64: compiled ember, eager ember and PyTorch give the same losses
    and parameters; the backward program holds a chain with row statistics in the middle."""
    ember.manual_seed(0)
    compiled_net, eager_net = _Net().double(), _Net().double()
    eager_net.load_state_dict(compiled_net.state_dict())
    twin = _model(torch).double()
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.tensor(compiled_net.parts.get_parameter(name).detach().numpy()))
    compiled = ember.compile(compiled_net)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 3, 24))
    target = rng.standard_normal((5, 3, 7))
    runs = [
        (compiled, ember, ember.optim.SGD(compiled_net.parameters(), lr=0.1)),
        (eager_net, ember, ember.optim.SGD(eager_net.parameters(), lr=0.1)),
        (lambda v: _forward(torch, twin, v), torch, torch.optim.SGD(twin.parameters(), lr=0.1)),
    ]
    losses = [[], [], []]
    for _ in range(30):
        for k, (run, lib, opt) in enumerate(runs):
            opt.zero_grad()
            loss = (run(lib.tensor(x)) * lib.tensor(target)).square().mean()
            loss.backward()
            opt.step()
            losses[k].append(loss.item())
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)
    np.testing.assert_allclose(losses[0], losses[2], rtol=1e-10)
    assert losses[0][-1] < losses[0][0]
    for name, p in twin.named_parameters():
        got = compiled_net.parts.get_parameter(name).detach().numpy()
        np.testing.assert_allclose(got, p.detach().numpy(), rtol=1e-9, atol=1e-12)
    (entry,) = [e for es in compiled._compiled._cache.values() for e in es if e.region]
    program = entry.region.joint.backward
    kernels = [v for k, v in program.__globals__.items() if k.startswith("FUSED")]
    # a row statistic accumulated mid-chain (``a<n>``) and passes over the row after it
    mid = [k.source for k in kernels if re.search(r"double a\d+ = 0;", k.source)]
    assert mid and max(s.count("for (int64_t j") for s in mid) >= 3, mid


def test_stored_statistics_and_values_of_each_pass():
    """The kernel stores a per-row statistic (an output of shape ``(*rows, 1)``), a per-row step
    on it, an element value of the first pass and one of the last, all returned."""

    def fn(lib, x, g, w):
        e = lib.exp(x * 0.5)  # first pass: stored, and read by the statistic
        total = e.sum(-1, keepdim=True)
        inv = lib.rsqrt(total)  # a per-row step
        return e, total, inv, e * inv - g

    arrays = _arrays(np.float64, (2, 3, 5, 19), seed=9)
    ours = [ember.tensor(a) for a in arrays]
    got, source = replayed(lambda *a: fn(ember, *a), ours)
    assert source.count("FUSED") == 1 and "K(" not in source and "R(" not in source, source
    want = fn(torch, *[torch.tensor(a) for a in arrays])
    for g, e, w in zip(got, fn(ember, *ours), want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
