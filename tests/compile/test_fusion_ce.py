"""Cross-entropy in a compiled training step (compiler/fusion.py, the CPU plugin's fused.py and
fused_rows.py): the backward's one-hot gradient (``full(0)`` and ``scatter_add`` of one value
per row along the last dim) and log-softmax backward (``g - exp(logp) * sum(g, -1)``) run as
one row kernel. Values, float64 training trajectories (with ignored targets) and float32 ones
are compared with eager ember and PyTorch; an index out of range raises scatter_add's error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .test_fusion import _replayed

fused_cpu = pytest.importorskip("ember_backend_cpu.fused")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _one_hot(lib, x, index, src):
    base = lib.full(tuple(x.shape), 0.0, dtype=x.dtype, device=x.device)
    return (base.scatter_add(-1, index, src) - lib.exp(x)) * 2.0


def test_one_hot_chain_is_one_kernel_and_checks_its_indices():
    rng = np.random.default_rng(0)
    x, src = rng.standard_normal((6, 13)), rng.standard_normal((6, 1))
    index = rng.integers(0, 13, (6, 1))
    ours = [ember.tensor(x), ember.tensor(index), ember.tensor(src)]
    out, source = _replayed(lambda *a: _one_hot(ember, *a), ours)
    assert source.count("FUSED") == 1 and "R(" not in source, source
    want = _one_hot(torch, torch.tensor(x), torch.tensor(index), torch.tensor(src))
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    index[2, 0] = 13  # out of range: the kernel flags it, the call raises eager's error
    bad = [ember.tensor(x), ember.tensor(index), ember.tensor(src)]
    with pytest.raises(IndexError) as eager:
        _one_hot(ember, *bad)
    compiled = ember.compile(lambda *a: _one_hot(ember, *a))
    with pytest.raises(IndexError) as fused, ember.no_grad():
        compiled(*ours)  # the capture; the call below replays (same guards)
        compiled(*bad)
    assert str(fused.value) == str(eager.value)


class _Net(ember.nn.Module):
    def __init__(self, lib=ember):
        super().__init__()
        self.up, self.head = lib.nn.Linear(16, 16), lib.nn.Linear(16, 11)

    def forward(self, x, target):
        return _loss(ember, self, x, target)


def _loss(lib, net, x, target):
    h = lib.nn.functional.gelu(net.up(x))
    return lib.nn.functional.cross_entropy(net.head(h), target, ignore_index=-100)


def _trajectories(dtype, steps=30, device="cpu"):
    ember.manual_seed(0)
    net, eager = _Net().to(dtype).to(device), _Net().to(dtype).to(device)
    eager.load_state_dict(net.state_dict())
    twin = torch.nn.ModuleDict({"up": torch.nn.Linear(16, 16), "head": torch.nn.Linear(16, 11)})
    twin = twin.to(getattr(torch, str(dtype)[6:]))
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.tensor(net.get_parameter(name).detach().cpu().numpy()))
    rng = np.random.default_rng(4)
    x = rng.standard_normal((20, 16)).astype(str(dtype)[6:])
    target = rng.integers(0, 11, 20)
    target[[3, 7]] = -100  # ignored rows: no gradient, not in the mean
    compiled = ember.compile(net)
    runs = [
        (lambda a, t: compiled(a, t), ember, ember.optim.SGD(net.parameters(), lr=0.5)),
        (lambda a, t: eager(a, t), ember, ember.optim.SGD(eager.parameters(), lr=0.5)),
        (lambda a, t: _loss(torch, twin, a, t), torch, torch.optim.SGD(twin.parameters(), lr=0.5)),
    ]
    losses = [[], [], []]
    for _ in range(steps):
        for k, (run, lib, opt) in enumerate(runs):
            opt.zero_grad()
            where = {"device": device} if lib is ember else {}
            loss = run(lib.tensor(x, **where), lib.tensor(target, **where))
            loss.backward()
            opt.step()
            losses[k].append(loss.item())
    (entry,) = [e for es in compiled._compiled._cache.values() for e in es if e.region]
    return losses, entry.region.joint


def test_training_with_cross_entropy_matches_eager_and_torch():
    losses, joint = _trajectories(ember.float64)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)
    np.testing.assert_allclose(losses[0], losses[2], rtol=1e-10)
    assert losses[0][-1] < 0.5 * losses[0][0]
    kernels = [v for k, v in joint.backward.__globals__.items() if k.startswith("FUSED")]
    # the one-hot gradient and the log-softmax backward: one kernel, no scatter_add call
    assert any("em_sel(j ==" in k.source and "double a" in k.source for k in kernels)
    ops = [v.name for k, v in joint.backward.__globals__.items() if k.startswith("OP")]
    assert "exp" not in ops and "scatter_add" not in ops and "full" not in ops, ops


def test_float32_training_follows_eager():
    losses, _ = _trajectories(ember.float32, steps=20)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
    np.testing.assert_allclose(losses[0], losses[2], rtol=1e-4)
