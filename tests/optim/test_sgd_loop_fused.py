"""SGD's default path (``fused`` off) runs as one ``_fused_sgd_`` call where that gives the
per-parameter loop's bits (``ember/optim/_fused.py`` ``sgd_loop_lists``): float32/float64 CPU
parameters, every option; other groups keep the loop. Checked to the bit against the loop and
within float rounding against ``torch.optim.SGD``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import ember
from ember.optim import _fused

_GRID = itertools.product((0, 0.9), (0, 0.3), (False, True), (0, 0.01), (False, True))
OPTIONS = [
    dict(momentum=m, dampening=d, nesterov=n, weight_decay=w, maximize=x)
    for m, d, n, w, x in _GRID
    if not n or (m != 0 and d == 0)  # Nesterov needs momentum and no dampening
]


def _shapes():
    return [(37, 5), (11,), (3, 4, 2)]


def _steps(opt_of, dtype, steps=4, lib=ember):
    """The parameters after ``steps`` steps with fixed gradients, from a seeded start."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(s) for s in _shapes()]
    grads = [[rng.standard_normal(s) for s in _shapes()] for _ in range(steps)]
    np_dtype = np.float32 if dtype in (ember.float32, torch.float32) else np.float64
    params = [lib.tensor(a.astype(np_dtype), requires_grad=True) for a in start]
    opt = opt_of(params)
    for step in grads:
        for p, g in zip(params, step):
            p.grad = lib.tensor(g.astype(np_dtype))
        opt.step()
    return [p.detach().numpy() for p in params]


def _counting(monkeypatch):
    calls = []
    real = ember._fused_sgd_

    def counted(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(ember, "_fused_sgd_", counted)
    return calls


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kw", OPTIONS, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_the_default_step_is_one_call_with_the_loops_bits(kw, dtype, monkeypatch):
    calls = _counting(monkeypatch)
    got = _steps(lambda ps: ember.optim.SGD(ps, lr=0.1, **kw), dtype)
    assert calls == [3] * 4  # one call a step, the three parameters
    monkeypatch.setattr(_fused, "sgd_loop_lists", lambda group, states: None)
    want = _steps(lambda ps: ember.optim.SGD(ps, lr=0.1, **kw), dtype)
    assert calls == [3] * 4  # the loop made none
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    tdtype = torch.float32 if dtype is ember.float32 else torch.float64
    theirs = _steps(lambda ps: torch.optim.SGD(ps, lr=0.1, foreach=False, **kw), tdtype, lib=torch)
    tol = 1e-6 if dtype is ember.float32 else 1e-14
    for a, b in zip(got, theirs):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _group_params(dtypes):
    params = [ember.randn(4, dtype=d, requires_grad=True) for d in dtypes]
    for p in params:
        p.grad = ember.randn(4, dtype=p.dtype)
    return params


@pytest.mark.parametrize(
    "dtypes",
    [
        [ember.float16, ember.float16],  # the fused kernel would round once a step, not per op
        [ember.bfloat16],
        [ember.float32, ember.float64],  # two dtypes: the loop
    ],
    ids=["float16", "bfloat16", "mixed"],
)
def test_other_groups_keep_the_loop(dtypes, monkeypatch):
    calls = _counting(monkeypatch)
    params = _group_params(dtypes)
    before = [p.detach().clone() for p in params]
    ember.optim.SGD(params, lr=0.5).step()
    assert calls == []
    for p, b in zip(params, before):
        np.testing.assert_array_equal(
            p.detach().float().numpy(), (b - 0.5 * p.grad).float().numpy()
        )


def test_differentiable_and_half_made_buffers_keep_the_loop(monkeypatch):
    calls = _counting(monkeypatch)
    params = _group_params([ember.float32, ember.float32])
    ember.optim.SGD(params, lr=0.1, differentiable=True).step()
    assert calls == []
    opt = ember.optim.SGD(params, lr=0.1, momentum=0.9)
    opt.state[params[0]]["momentum_buffer"] = ember.zeros(4)  # one buffer made, one not
    opt.step()
    assert calls == []
    assert "momentum_buffer" in opt.state[params[1]]
    opt.step()  # both made now: one call
    assert calls == [2]
