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


@pytest.mark.parametrize(
    "view",
    [lambda t: t.view(-1), lambda t: t[0], lambda t: t.t(), lambda t: t.unsqueeze(0)],
    ids=["view", "select", "t", "unsqueeze"],
)
def test_a_view_of_a_buffer_returned_is_overwritten_with_it(view, device):
    """An output that is a view of a buffer (the buffer itself not returned) is overwritten by
    the next call as the buffer is: reading it raises instead of giving the next call's
    numbers."""

    def fn(x):
        return view(_f(x))

    fast = ember.compile(fn, mode="reduce-overhead")
    x, y = ember.randn(4, 3, device=device), ember.randn(4, 3, device=device)
    for _ in range(2):
        got = fast(x)
    np.testing.assert_allclose(_values(got), _values(fn(x)), rtol=1e-6, atol=1e-6)
    again = fast(y)
    np.testing.assert_allclose(_values(again), _values(fn(y)), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        _values(got)


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


def test_matmul_outputs_live_in_buffers(device):
    """``mm`` nodes and lowered composites (``linear``: ``mm`` and ``add``) write preallocated
    buffers as elementwise nodes do: a returned product is overwritten by the next call and
    reading it raises PyTorch's error; the values equal default mode's."""
    ember.manual_seed(0)
    w = ember.randn(6, 5, device=device)
    model = nn.Linear(5, 3).to(device)

    def f(x):
        return (x @ w).relu(), model(x @ w)

    fast = ember.compile(f, mode="reduce-overhead")
    xs = [ember.randn(4, 6, device=device) for _ in range(3)]
    with ember.no_grad():
        outs = []
        for x in xs:
            ember.compiler.cudagraph_mark_step_begin()  # one call per iteration
            got = fast(x)
            for g, want in zip(got, f(x)):
                np.testing.assert_allclose(_values(g), _values(want), rtol=1e-5, atol=1e-6)
            outs.append(got)
        (entry,) = [e for es in fast._cache.values() for e in es]
        plans = entry.region.fast
        source = plans.programs[0].source
        assert "K" in source and "SUB" in source and "BUF" in source
        assert len(plans.buffers[0]) >= 4  # mm, relu, and linear's mm and add
        for stale in outs[1]:
            with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
                stale + 1
        for g, want in zip(outs[-1], f(xs[-1])):
            np.testing.assert_allclose(_values(g), _values(want), rtol=1e-5, atol=1e-6)


def test_training_region_buffers(device):
    """A training region's pair (joint.py) is planned too: its forward output lives in a buffer
    (overwritten by the next call, PyTorch's error on a stale read), the saved tensors and the
    gradients are fresh, and 5 SGD steps give default mode's losses and parameters."""
    runs = []
    for mode in ("reduce-overhead", "default"):
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3)).to(device).double()
        fast = ember.compile(model, mode=mode)
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        rng = np.random.default_rng(0)
        outs, losses = [], []
        for _ in range(5):
            ember.compiler.cudagraph_mark_step_begin()
            x = ember.tensor(rng.standard_normal((4, 6)), dtype=ember.float64, device=device)
            out = fast(x)
            loss = (out * out).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
            outs.append(out)
        runs.append((losses, [_values(p) for p in model.parameters()], fast, outs))
    (losses, params, fast, outs), (want_losses, want_params, _, _) = runs
    np.testing.assert_allclose(losses, want_losses, rtol=1e-12)
    for got, want in zip(params, want_params):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    (entry,) = [e for es in fast._compiled._cache.values() for e in es]
    pair = entry.region.joint
    assert "BUF" in pair.forward.programs[0].source and "BUF" in pair.backward.source
    with pytest.raises(RuntimeError, match="overwritten by a subsequent run"):
        outs[-2] + 1
    _values(outs[-1])  # the last call's output is still valid
