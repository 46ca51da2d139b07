"""Grad mode inside compiled code: a ``no_grad`` block (BatchNorm's running-statistics update,
or the user's own) replays without recording autograd history, on every replay path (the
dispatching replay under autocast or where the joint pair is refused, the dispatch-free
program, the joint pair), as torch.compile keeps it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.compiler.joint import Joint


def _regions(compiled):
    cache = getattr(compiled, "_compiled", compiled)._cache  # a module's or a function's
    return [e.region for es in cache.values() for e in es if e.region]


def _bn_model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))


def _step(run, x):
    run(x).sum().backward()


@pytest.mark.parametrize("mode", ["autocast", "closure", "joint"])
def test_batchnorm_running_stats_get_no_history(mode):
    eager, model = _bn_model(), _bn_model()
    if mode == "closure":  # the function closes over the parameters: differentiated as well
        compiled, plain = ember.compile(lambda x: model(x)), lambda x: eager(x)
    else:
        compiled, plain = ember.compile(model), eager
    x = ember.randn(8, 4, generator=ember.Generator().manual_seed(1))
    for _ in range(4):
        for run in (plain, compiled):
            if mode == "autocast":
                with ember.autocast("cpu", dtype=ember.bfloat16):
                    _step(run, x)
            else:
                _step(run, x)
    for name in ("running_mean", "running_var"):
        got, want = getattr(model[1], name), getattr(eager[1], name)
        assert got.grad_fn is None and not got.requires_grad, name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert model[1].num_batches_tracked.item() == eager[1].num_batches_tracked.item() == 4
    (region,) = _regions(compiled)
    if mode != "autocast":  # the pair was built (a closure's parameters are inputs of its node)
        assert isinstance(region.joint, Joint)


def _user_fn(lib, x, w, buffer):
    y = x * w
    with lib.no_grad():
        buffer.mul_(0.5).add_(y.sum(0))
        z = y * 2.0
    return y.sin(), z, (z + y).cos()


def _torch_run(x, w, steps, under_no_grad=False):
    xt, wt = torch.tensor(x), torch.tensor(w, requires_grad=True)
    buffer = torch.zeros(3, dtype=torch.float64)
    for _ in range(steps):
        if under_no_grad:
            with torch.no_grad():
                outs = _user_fn(torch, xt, wt, buffer)
        else:
            outs = _user_fn(torch, xt, wt, buffer)
    return outs, buffer, wt


@pytest.mark.parametrize("under_no_grad", [False, True], ids=["grad", "no_grad"])
@pytest.mark.parametrize("autocast", [False, True], ids=["plain", "autocast"])
def test_user_no_grad_block_matches_torch(under_no_grad, autocast):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal(3)
    want, want_buffer, wt = _torch_run(x, w, 3, under_no_grad)
    xe, we = ember.tensor(x), ember.tensor(w, requires_grad=True)
    buffer = ember.zeros(3, dtype=ember.float64)
    compiled = ember.compile(lambda x, w: _user_fn(ember, x, w, buffer))
    for _ in range(3):  # capture, then replays
        # float64 is no autocast dtype: autocast only forces the dispatching replay
        cast = ember.autocast("cpu", dtype=ember.bfloat16, enabled=autocast)
        with ember.set_grad_enabled(not under_no_grad), cast:
            got = compiled(xe, we)
        assert ember.is_grad_enabled()
    for g, t in zip(got, want):
        assert g.requires_grad == t.requires_grad
        assert (g.grad_fn is None) == (t.grad_fn is None)
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-12)
    assert buffer.grad_fn is None and not buffer.requires_grad
    np.testing.assert_allclose(buffer.numpy(), want_buffer.numpy(), rtol=1e-12)
    if not under_no_grad:
        got[0].sum().backward()
        want[0].sum().backward()
        np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-12)


def test_jit_trace_graphs_record_no_grad_mode():
    def fn(x):
        with ember.no_grad():
            y = x * 2.0
        return y + 1.0

    graph = ember.jit.trace(fn, (ember.randn(3),)).graph
    assert "set_grad_enabled" not in str(graph)


class _Frozen(nn.Module):
    """A parameter first read inside the no_grad block, frozen at capture."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(ember.linspace(0.5, 1.5, 3), requires_grad=False)
        self.register_buffer("total", ember.zeros(3))

    def forward(self, x):
        with ember.no_grad():
            self.total.add_(x.sum(0) * self.w)
        return x * self.w


def test_dispatch_free_program_keeps_grad_mode():
    eager, model = _Frozen(), _Frozen()
    compiled = ember.compile(model)
    x = ember.randn(4, 3, generator=ember.Generator().manual_seed(2))
    for _ in range(3):
        got, want = compiled(x), eager(x)
        assert ember.is_grad_enabled()
    (region,) = _regions(compiled)
    assert region.fast is not None and "set_grad_enabled(False)" in region.fast.source
    assert not got.requires_grad
    # unfrozen after the capture: the program leaves the call to the dispatching replay
    model.w.requires_grad_(True)
    eager.w.requires_grad_(True)
    got, want = compiled(x), eager(x)
    assert ember.is_grad_enabled() and got.requires_grad and want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert model.total.grad_fn is None
    np.testing.assert_allclose(model.total.numpy(), eager.total.numpy(), rtol=1e-6)
