"""``mode="reduce-overhead"`` (compiler/overhead.py): the replay writes preallocated buffers, so
results equal default mode's, a call overwrites the previous call's outputs (PyTorch's caveat:
clone to keep them), and ``cudagraph_mark_step_begin`` makes iterations span several calls."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn


def _f(x):
    return (x * 2.0).sin() + x.exp() * 0.5


def _values(t):
    return t.detach().cpu().numpy().copy()


def test_outputs_match_default_and_are_overwritten(device):
    fast = ember.compile(_f, mode="reduce-overhead")
    plain = ember.compile(_f)
    xs = [ember.randn(4, 3, device=device) for _ in range(4)]
    kept = []
    for x in xs:
        got = fast(x)
        np.testing.assert_allclose(_values(got), _values(plain(x)), rtol=1e-6, atol=1e-6)
        kept.append((got, got.clone()))
    first, cloned = kept[1]
    assert first.shape == (4, 3) and first is not kept[-1][0]
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        first + 1  # its buffer holds the last call's values now (PyTorch raises too)
    np.testing.assert_allclose(_values(cloned), _values(plain(xs[1])), rtol=1e-6, atol=1e-6)
    last = kept[-1][0]
    np.testing.assert_allclose(_values(last), _values(plain(xs[-1])), rtol=1e-6, atol=1e-6)
    (entry,) = [e for es in fast._cache.values() for e in es]
    assert "BUF" in entry.region.fast.programs[0].source


def test_mark_step_begin_keeps_a_step_outputs(device):
    fast = ember.compile(_f, mode="reduce-overhead")
    x, y = ember.randn(5, device=device), ember.randn(5, device=device)
    fast(x)
    for _ in range(3):
        ember.compiler.cudagraph_mark_step_begin()
        a, b = fast(x), fast(y)  # one iteration: two buffer sets
        np.testing.assert_allclose(_values(a), _values(_f(x)), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(_values(b), _values(_f(y)), rtol=1e-6, atol=1e-6)
    ember.compiler.cudagraph_mark_step_begin()
    fast(y)
    np.testing.assert_allclose(_values(b), _values(_f(y)), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="overwritten"):
        _values(a)  # the new iteration reused a's buffer


def test_module_inference_and_training(device):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 4), nn.Tanh()).to(device)
    fast = ember.compile(model, mode="reduce-overhead")
    x = ember.randn(3, 8, device=device)
    with ember.no_grad():
        for _ in range(3):
            np.testing.assert_allclose(_values(fast(x)), _values(model(x)), rtol=1e-5, atol=1e-6)
    for _ in range(3):  # a training region keeps the default replay: gradients as eager
        model.zero_grad()
        fast(x).sum().backward()
        got = [_values(p.grad) for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for g, p in zip(got, model.parameters()):
            np.testing.assert_allclose(g, _values(p.grad), rtol=1e-5, atol=1e-6)
