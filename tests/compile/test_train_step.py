"""A whole training step compiled (compiler/train_region.py): forward, ``loss.backward()``,
``opt.step()`` and ``opt.zero_grad()`` in one compiled function replay as one region with no
graph break, and follow eager's loss curve and parameters over 50 steps."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler.joint import Joint
from ember.compiler.train_region import TrainRegion

CASES = [("Adam", {"lr": 0.01}, True), ("SGD", {"lr": 0.1, "momentum": 0.9}, False)]


def _run(device, name, kw, set_to_none, compiled, steps=50):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).to(device).double()
    opt = getattr(ember.optim, name)(model.parameters(), **kw)

    def train_step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)
        return loss

    fn = ember.compile(train_step, fullgraph=True) if compiled else train_step
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(steps):
        x = ember.tensor(rng.standard_normal((5, 6)), dtype=ember.float64, device=device)
        y = ember.tensor(rng.integers(0, 3, 5), device=device)
        losses.append(fn(x, y).item())
    params = [p.detach().cpu().numpy() for p in model.parameters()]
    return losses, params, fn, train_step, (x, y)


@pytest.mark.parametrize("name,kw,set_to_none", CASES, ids=[c[0] for c in CASES])
def test_train_step_matches_eager_over_50_steps(name, kw, set_to_none, device):
    losses, params, fn, _, _ = _run(device, name, kw, set_to_none, compiled=True)
    want_losses, want_params, _, _, _ = _run(device, name, kw, set_to_none, compiled=False)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12, atol=1e-12)
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    (entry,) = [e for es in fn._cache.values() for e in es]
    assert isinstance(entry.region, TrainRegion) and entry.reasons == []
    assert len(entry.region.steps) == 1 and entry.region.backward
    if device == "cpu":  # the model closed over is differentiated by the compiled pair
        assert isinstance(entry.region.forward.joint, Joint)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_explain_shows_no_break(set_to_none):
    *_, train_step, args = _run("cpu", "Adam", {"lr": 0.01}, set_to_none, compiled=False, steps=1)
    out = ember._dynamo.explain(train_step)(*args)
    assert out.graph_break_count == 0 and out.graph_count == 1
    assert "ember::cross_entropy_loss" in out.ops_per_graph[0]


def test_zero_grad_before_the_forward_runs_first(device):
    """``zero_grad`` first, as many loops write it: replayed before the forward."""
    p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)

    @ember.compile(fullgraph=True)
    def step(x):
        opt.zero_grad()
        loss = (x * p).sum()
        loss.backward()
        opt.step()
        return loss

    x = ember.full((3,), 2.0, dtype=ember.float64, device=device)
    for i in range(4):
        assert step(x).item() == pytest.approx(6.0 * (1 - 0.2 * i))
    np.testing.assert_allclose(p.detach().cpu().numpy(), 1 - 0.2 * 4, rtol=1e-12)


def test_unsupported_backward_forms_stay_breaks():
    p = ember.ones(3, requires_grad=True)

    def twice(x):
        loss = (x * p).sum()
        loss.backward(retain_graph=True)
        return loss

    entry_fn = ember.compile(twice)
    entry_fn(ember.ones(3))
    (entry,) = [e for es in entry_fn._cache.values() for e in es]
    assert entry.region is None and "Tensor.backward()" in entry.reasons[0].reason
