"""Module hooks under ember.compile: a replay runs no Python, so hooks registered after the
capture, removed, or with side effects must not be skipped (compiler/guards.py HookGuard,
effects.py's watch of the hooks' functions, and backward hooks running the Python at every
call)."""

from __future__ import annotations

import numpy as np

import ember
import ember.nn as nn


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def _entries(compiled) -> int:
    return sum(len(es) for es in compiled._compiled._cache.values())


def test_forward_hooks_with_side_effects_run_at_every_call():
    model = nn.Linear(2, 2)
    calls = []
    model.register_forward_hook(lambda module, args, out: calls.append(out.shape))
    model.register_forward_pre_hook(lambda module, args: calls.append("pre"))
    compiled = ember.compile(model)
    for _ in range(3):
        compiled(ember.randn(1, 2))
    assert calls.count("pre") == 3 and len(calls) == 6


def test_hooks_registered_or_removed_after_the_capture_apply():
    model = nn.Linear(2, 2)
    compiled = ember.compile(model)
    x = ember.randn(1, 2)
    plain = compiled(x)
    handle = model.register_forward_pre_hook(lambda module, args: (args[0] * 0,))
    for _ in range(2):
        _close(compiled(x), model.bias.unsqueeze(0))
    out_hook = model.register_forward_hook(lambda module, args, out: out * 3)
    _close(compiled(x), model.bias.unsqueeze(0) * 3)
    handle.remove()
    out_hook.remove()
    _close(compiled(x), plain)


def test_other_modules_hooks_do_not_recompile():
    model, other = nn.Linear(2, 2), nn.Linear(2, 2)
    compiled = ember.compile(model)
    x = ember.randn(1, 2)
    compiled(x)
    for _ in range(3):  # a profiler or a probe adding and removing hooks elsewhere at each step
        other.register_forward_hook(lambda *a: None).remove()
        compiled(x)
    assert _entries(compiled) == 1


def test_full_backward_hooks_run_at_every_backward():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
    seen = []
    model[0].register_full_backward_hook(lambda module, gi, go: seen.append(go[0].shape))
    model[2].register_full_backward_pre_hook(lambda module, go: (go[0] * 10,))
    compiled = ember.compile(model)
    x = ember.randn(4, 3)
    for step in range(3):
        model.zero_grad()
        compiled(x).sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for a, p in zip(got, model.parameters()):
            _close(a, p.grad)
        assert len(seen) == 2 * (step + 1)
