"""Guards and recompiles: what changes recaptures, what does not, the limit and its warning."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import config, logs
from ember.compiler.exc import FailOnRecompileLimitHit


def _f(x):
    return (x * 2).tanh()


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "change",
    [
        lambda x: ember.randn(5, 3),  # size
        lambda x: x.double(),  # dtype
        lambda x: x.detach().requires_grad_(),  # requires_grad
    ],
    ids=["size", "dtype", "requires_grad"],
)
def test_tensor_guards_recompile(change):
    compiled = ember.compile(_f)
    x = ember.randn(4, 3)
    compiled(x)
    compiled(ember.randn(4, 3))  # same guards: the replay
    assert compiled._count == 1
    other = change(x)
    _close(compiled(other), _f(other))
    assert compiled._count == 2
    _close(compiled(other), _f(other))
    assert compiled._count == 2


def test_grad_mode_and_training_flag_guards():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    compiled = ember.compile(model)
    x = ember.randn(8, 4)
    compiled(x)
    with ember.no_grad():
        compiled(x)
    assert compiled._compiled._count == 2
    model.eval()
    _close(compiled(x), model(x))  # eval: dropout off, so equal to eager
    assert compiled._compiled._count == 3


def test_recompile_limit_warns_then_runs_eagerly(limit, caplog):
    config.recompile_limit = 2
    compiled = ember.compile(_f, dynamic=False)  # a graph per size (no automatic dynamic)
    for n in (1, 2, 3, 4):
        x = ember.randn(n)
        with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
            _close(compiled(x), _f(x))
    assert compiled._count == 2
    warnings = [r.getMessage() for r in caplog.records if "recompile_limit" in r.getMessage()]
    assert len(warnings) == 1
    assert "ember._dynamo hit config.recompile_limit (2)" in warnings[0]
    assert "size mismatch at index 0. expected 2, actual 3" in warnings[0]


def test_recompile_limit_with_fullgraph_raises(limit):
    config.recompile_limit = 1
    compiled = ember.compile(_f, fullgraph=True)
    compiled(ember.randn(1))
    with pytest.raises(FailOnRecompileLimitHit):
        compiled(ember.randn(2))


def test_logs_name_the_guard_failure(capsys):
    logs.set_logs(recompiles=True, graphs=True, guards=True, fusion=True)
    try:
        compiled = ember.compile(_f)
        compiled(ember.randn(3))
        compiled(ember.randn(5))
    finally:
        logs.set_logs(recompiles=False, graphs=False, guards=False, fusion=False)
    err = capsys.readouterr().err
    assert "Recompiling function _f" in err
    assert "tensor 'x' size mismatch at index 0. expected 3, actual 5" in err
    assert "ember::mul" in err and "ember::tanh" in err  # the graph
    assert "automatic dynamic shapes: 'x' dim 0 dynamic" in err
    assert "TENSOR_MATCH: 'x' size=[3]" in err  # the guards: the first graph's size
    assert "TENSOR_MATCH: 'x' size=[s]" in err  # the second's: symbolic


def test_ember_logs_environment(monkeypatch):
    monkeypatch.setenv("EMBER_LOGS", "graphs,+recompiles")
    logs.from_env()
    try:
        assert logs.enabled("graphs") and logs.enabled("recompiles")
        assert not logs.enabled("guards")
        with pytest.warns(UserWarning, match="unknown artifact 'bogus'"):
            logs.from_env("bogus")
    finally:
        logs.from_env("")


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 2.0
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(x) * self.scale


def test_module_attributes_read_are_guarded(capsys):
    model = _Scaled()
    compiled = ember.compile(model)
    x = ember.randn(2, 3)
    compiled(x)
    model.scale = 3.0
    logs.set_logs(recompiles=True)
    try:
        _close(compiled(x), model(x))
    finally:
        logs.set_logs(recompiles=False)
    assert compiled._compiled._count == 2
    assert "_Scaled.scale changed (guarded: 2.0)" in capsys.readouterr().err
