"""Training through ember.compile: the joint forward/backward pair (compiler/joint.py) gives
eager's gradients, updates buffers and draws random numbers as eager does, and is used for the
zoo's training models."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.compile.test_zoo import _cnn_setup, _gpt_setup, _mlp_setup


def _regions(compiled):
    return [e.region for es in compiled._compiled._cache.values() for e in es if e.region]


def _grads(model):
    return [p.grad.detach().cpu().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("setup", [_mlp_setup, _cnn_setup, _gpt_setup], ids=["mlp", "cnn", "gpt"])
def test_compiled_training_gradients_match_eager(setup, device):
    ember.manual_seed(0)
    model, batch = setup()
    model.to(device).eval()  # no dropout: the same gradients whatever the random draws
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    x, y = (t.to(device) for t in batch(ember.Generator().manual_seed(1)))
    for _ in range(3):  # capture, build the pair, run the pair
        for m, run in ((model, compiled), (twin, twin)):
            m.zero_grad()
            logits = run(x)
            F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).backward()
        for got, want in zip(_grads(model), _grads(twin)):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    if device == "cpu":  # elsewhere a CPU fallback's copies may keep the dispatching replay
        assert all(r.joint is not None for r in _regions(compiled))


class _Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.randn(5))
        self.frozen = nn.Parameter(ember.randn(5), requires_grad=False)

    def forward(self, x):
        return (x.sin() * self.w + self.frozen).tanh()


def test_gradients_of_inputs_and_parameters_match_eager():
    ember.manual_seed(0)
    model = _Scale()
    compiled = ember.compile(model)
    base = ember.randn(4, 5, dtype=ember.float32)
    g = ember.randn(4, 5)
    for _ in range(3):
        x = base.clone().requires_grad_()
        model.w.grad = None
        compiled(x).backward(g)
        got = (x.grad.numpy().copy(), model.w.grad.numpy().copy())
        x = base.clone().requires_grad_()
        model.w.grad = None
        model(x).backward(g)
        np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(got[1], model.w.grad.numpy(), rtol=1e-6)
    (region,) = _regions(compiled)
    assert region.joint is not None and region.joint.saved_bytes > 0


def test_a_frozen_parameter_that_starts_requiring_grad_gets_its_gradient():
    ember.manual_seed(0)
    model = _Scale()
    compiled = ember.compile(model)
    x = ember.randn(4, 5)
    for _ in range(2):
        compiled(x).sum().backward()
    model.frozen.requires_grad_(True)
    compiled(x).sum().backward()
    got = model.frozen.grad.detach().clone()
    model.frozen.grad = None
    model(x).sum().backward()
    np.testing.assert_allclose(got.numpy(), model.frozen.grad.numpy(), rtol=1e-6)


def test_retain_graph_and_double_backward():
    model = _Scale()
    compiled = ember.compile(model)
    x = ember.randn(4, 5)
    compiled(x)
    compiled(x)
    out = compiled(x).sum()
    out.backward(retain_graph=True)
    first = model.w.grad.detach().clone()
    out.backward()
    np.testing.assert_allclose(model.w.grad.detach().numpy(), 2 * first.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(compiled(x).sum(), model.w, create_graph=True)


def test_buffers_and_random_draws_as_in_eager():
    def build():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5), nn.Linear(6, 2))

    eager, model = build(), build()
    compiled = ember.compile(model)
    x = ember.randn(8, 4)
    outs = []
    for run in (eager, compiled):
        ember.manual_seed(1)
        outs.append([run(x).sum().item() for _ in range(4)])
        for _ in range(4):
            run(x).sum().backward()
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5)
    # float32 rounding apart: eager linear is PyTorch's one-gemm addmm (the bias is the gemm's C),
    # the compiled program adds the bias in its fused kernel after mm, so the last bit may differ
    np.testing.assert_allclose(
        model[1].running_mean.numpy(), eager[1].running_mean.numpy(), rtol=1e-6, atol=1e-7
    )
    assert model[1].num_batches_tracked.item() == eager[1].num_batches_tracked.item() == 8
    assert all(r.joint is not None for r in _regions(compiled))
