"""Compiled functions that touch state outside their graph: gradients cleared by the user's code,
in-place parameter updates after a graph break, a GradScaler, the random generator seeded or
restored. Results, gradients and parameters must be eager's at every call; before these fixes
every case here drifted from the second or third call on (gradients accumulated across calls,
an update applied twice, random draws not repeated)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn


def _pair():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    return model, copy.deepcopy(model)


def _close(a, b):
    for p, q in zip(a, b):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


def _clear_by_module(model):
    model.zero_grad()


def _clear_by_hand(model):
    for p in model.parameters():
        p.grad = None


def _zero_in_place(model):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()


@pytest.mark.parametrize("clear", [_clear_by_module, _clear_by_hand, _zero_in_place])
def test_gradients_cleared_inside_the_step(clear):
    """``model.zero_grad()`` is replayed like ``opt.zero_grad()``; clearing or reading ``.grad``
    by hand is a graph break (the replay would skip it and the next backward accumulate)."""
    model, twin = _pair()

    def step(m, x):
        clear(m)
        loss = m(x).pow(2).mean()
        loss.backward()
        return loss

    compiled = ember.compile(step)
    for _ in range(4):
        x = ember.randn(8, 4)
        compiled(model, x)
        step(twin, x)
        _close([p.grad for p in model.parameters()], [p.grad for p in twin.parameters()])


def test_in_place_updates_after_a_break_apply_once():
    """A segment that updates tensors from outside it under no_grad (an optimizer's step after
    a ``.item()``) was run once by the compiled pair's tracing run and once more by the replay
    (the pair is now refused for a graph that writes its inputs, and not built without grad
    mode)."""

    def update(params, grads, x):
        x.sum().item()
        with ember.no_grad():
            for p, g in zip(params, grads):
                p.add_(g, alpha=-0.1)
        return x * 2

    compiled = ember.compile(update)
    for i in range(4):
        params = [ember.ones(3, requires_grad=True), ember.ones(2, requires_grad=True)]
        twins = [p.detach().clone().requires_grad_() for p in params]
        grads = [ember.full((3,), i + 1.0), ember.full((2,), i + 1.0)]
        compiled(params, grads, ember.ones(2))
        update(twins, grads, ember.ones(2))
        _close(params, twins)


@pytest.mark.parametrize("variant", ["item", "grad_scaler", "grad_scaler_autocast"])
def test_step_with_a_break_matches_eager(variant):
    model, twin = _pair()
    optimizers = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (model, twin)]
    scalers = [ember.amp.GradScaler("cpu") for _ in range(2)]

    def step(m, opt, scaler, x):
        opt.zero_grad()
        if variant == "grad_scaler_autocast":
            with ember.autocast("cpu", dtype=ember.bfloat16):
                loss = m(x).float().pow(2).mean()
        else:
            loss = m(x).pow(2).mean()
        if variant == "item":
            loss.backward()
            loss.item()  # logging: a graph break
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss

    compiled = ember.compile(step)
    for _ in range(5):
        x = ember.randn(8, 4)
        got = compiled(model, optimizers[0], scalers[0], x)
        want = step(twin, optimizers[1], scalers[1], x)
        _close([got], [want])
        _close(list(model.parameters()), list(twin.parameters()))


def _seeded(x):
    ember.manual_seed(0)
    return x + ember.randn(3)


def _restored(x):
    state = ember.get_rng_state()
    y = x + ember.rand(3)
    ember.set_rng_state(state)
    return y + ember.rand(3)  # the same draws again


def _forked(x):
    with ember.random.fork_rng():
        ember.manual_seed(5)
        y = ember.randn(3)
    return x + y + ember.randn(3)


@pytest.mark.parametrize("fn", [_seeded, _restored, _forked])
def test_generator_seeded_or_restored_inside(fn):
    """Seeding or setting the generator's state is a graph break (a replay would skip it), and
    in the segments the deferred random calls draw before the state is read or set."""
    compiled = ember.compile(fn)
    ember.manual_seed(1)
    got = [compiled(ember.zeros(3)) for _ in range(4)]
    ember.manual_seed(1)
    want = [fn(ember.zeros(3)) for _ in range(4)]
    _close(got, want)
