"""Compiled steps of RMSprop, Adagrad, Adamax, NAdam, RAdam, Adadelta, ASGD and Rprop
(compiler/optim_rules.py, optim_traced.py): 20-step trajectories equal eager ember's and
PyTorch's to float64 rounding, the update fuses into one kernel per bucket on the CPU, and the
state stays the eager step's (a state dict moves between them)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import logs
from ember.compiler.optim_step import CompiledStep

from .test_optim_step import _train as _run

CASES = [
    ("RMSprop", {}),
    ("RMSprop", {"momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"maximize": True, "alpha": 0.9}),
    ("Adagrad", {"lr_decay": 0.01, "weight_decay": 0.1}),
    ("Adagrad", {"initial_accumulator_value": 0.5, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"maximize": True, "weight_decay": 0.1}),
    ("NAdam", {}),
    ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("NAdam", {"weight_decay": 0.1, "momentum_decay": 0.01}),
    ("RAdam", {}),
    ("RAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 1.0}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
    ("ASGD", {"t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lambd": 0.01, "alpha": 0.5, "t0": 0}),
    ("Rprop", {}),
    ("Rprop", {"maximize": True, "etas": (0.4, 1.5), "step_sizes": (1e-4, 0.1)}),
]


def _train(lib, name, kw, device, *, compiled=False, steps=20, opt_hook=None):
    """test_optim_step's model and loop; an ``lr`` in ``kw`` overrides its 0.05."""
    kw = dict(kw)
    lr = kw.pop("lr", 0.05)
    return _run(lib, name, kw, device, compiled=compiled, lr=lr, steps=steps, hook=opt_hook)


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{sorted(k)}" for n, k in CASES])
def test_trajectory_matches_eager_and_torch(name, kw, device):
    got, opt = _train(ember, name, kw, device, compiled=True)
    assert isinstance(opt.step, CompiledStep) and opt.step._eager is None
    eager, _ = _train(ember, name, kw, device)
    want, _ = _train(torch, name, kw, "cpu")
    for g, e, w in zip(got, eager, want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_one_fused_kernel_per_bucket_on_the_cpu(monkeypatch):
    lines = []
    monkeypatch.setattr(logs, "log", lambda artifact, text: lines.append(text))
    monkeypatch.setattr(logs, "enabled", lambda artifact: True)
    for name in ("RMSprop", "Adagrad", "Adamax", "NAdam", "RAdam", "Adadelta", "ASGD"):
        _, opt = _train(ember, name, {}, "cpu", compiled=True, steps=2)
        (bucket,) = opt.step._plan.buckets
        assert bucket.fused == 1, name
        assert "1 fused kernel(s)" in bucket.describe()
    assert any("compiled RMSprop.step: 1 call(s)" in line for line in lines)


def test_state_dict_moves_between_eager_and_compiled(device):
    """Ten compiled steps, then the state into an eager optimizer for ten more: the same
    trajectory as twenty eager steps (the state entries are the eager step's, as views)."""

    def swap(i, opt):
        if i != 9:
            return opt
        eager = ember.optim.NAdam(opt.param_groups[0]["params"], lr=0.05)
        eager.load_state_dict(opt.state_dict())
        return eager

    got, _ = _train(ember, "NAdam", {}, device, compiled=True, opt_hook=swap)
    want, _ = _train(ember, "NAdam", {}, device)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_float_lr_change_rebuilds_once(device):
    """PyTorch 2.13's float rule, as for Adam: one rebuild at the first change, then the LR is
    read at each call."""

    def decay(i, opt):
        opt.param_groups[0]["lr"] *= 0.9
        return opt

    got, opt = _train(ember, "RMSprop", {}, device, compiled=True, opt_hook=decay)
    want, _ = _train(ember, "RMSprop", {}, device, opt_hook=decay)
    assert opt.step.recompiles == 1
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_train_step_with_a_traced_optimizer(device):
    """In a compiled training step the capture runs the update's ops as they are (a trace does
    not nest); the replays build and run the fused program."""
    runs = []
    for compiled in (True, False):
        ember.manual_seed(0)
        w = ember.randn(4, 3, dtype=ember.float64, device=device).requires_grad_()
        opt = ember.optim.Adadelta([w], lr=1.0)

        def step(x, w=w, opt=opt):
            loss = (x @ w).tanh().sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        fn = ember.compile(step, fullgraph=True) if compiled else step
        rng = np.random.default_rng(3)
        losses = [
            fn(ember.tensor(rng.standard_normal((2, 4)), dtype=ember.float64, device=device)).item()
            for _ in range(10)
        ]
        runs.append((losses, w.detach().cpu().numpy()))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-10)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-10, atol=1e-12)
