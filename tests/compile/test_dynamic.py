"""Symbolic sizes (compiler/dynamic.py): dynamic=True, mark_dynamic, automatic dynamic after a
size recompile, and the fallback to a graph per size when the capture baked a size."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.compiler import config, logs


def _flat(x):
    return (x * 2).tanh().view(x.size(0), -1).sum(1)


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_dynamic_true_one_graph_for_every_size():
    compiled = ember.compile(_flat, dynamic=True)
    for n in (4, 5, 6, 9, 2):
        x = ember.randn(n, 3, 2)
        _close(compiled(x), _flat(x))
    assert compiled._count == 1
    x = ember.randn(1, 3, 2)  # sizes 0 and 1 stay specialised, as in PyTorch
    _close(compiled(x), _flat(x))
    assert compiled._count == 2


def test_automatic_dynamic_after_a_size_change(limit, caplog, capsys):
    config.recompile_limit = 2
    compiled = ember.compile(_flat)
    logs.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
            for n in range(2, 12):
                x = ember.randn(n, 3, 2)
                _close(compiled(x), _flat(x))
    finally:
        logs.set_logs(recompiles=False)
    assert compiled._count == 2  # the first size, then one dynamic graph: no limit reached
    assert not [r for r in caplog.records if "recompile_limit" in r.getMessage()]
    err = capsys.readouterr().err
    assert "size mismatch at index 0. expected 2, actual 3" in err
    assert "automatic dynamic shapes: 'x' dim 0 dynamic" in err


def test_torch_agrees_on_the_frame_count():
    """PyTorch compiles the same function twice too (static, then automatic dynamic)."""
    torch._dynamo.reset()
    counts = torch._dynamo.utils.counters
    counts.clear()

    def theirs(x):
        return (x * 2).tanh().view(x.size(0), -1).sum(1)

    compiled = torch.compile(theirs, backend="eager")
    for n in range(2, 8):
        compiled(torch.randn(n, 3, 2))
    ours = ember.compile(_flat)
    for n in range(2, 8):
        ours(ember.randn(n, 3, 2))
    assert ours._count == counts["stats"]["unique_graphs"] == 2


def test_mark_dynamic_from_the_first_call():
    compiled = ember.compile(_flat)
    for n in (4, 7, 3):
        x = ember.randn(n, 3, 2)
        ember._dynamo.mark_dynamic(x, 0)
        _close(compiled(x), _flat(x))
    assert compiled._count == 1 and compiled._dynamic == {0: frozenset({0})}


def test_mark_static_keeps_a_dim_specialised():
    compiled = ember.compile(_flat, dynamic=True)
    for n in (4, 5, 6):
        x = ember.randn(3, n, 2)
        ember._dynamo.mark_static(x, 1)
        _close(compiled(x), _flat(x))
    assert compiled._count == 3 and 1 not in compiled._dynamic[0]


def test_slices_of_a_size_stay_symbolic():
    def f(x):
        h = x.shape[1] // 2
        return x[:, :h] * 2 + x.narrow(1, 0, h)

    compiled = ember.compile(f, dynamic=True)
    for n in (4, 6, 8):
        x = ember.randn(3, n)
        _close(compiled(x), f(x))
    assert compiled._count == 1 and not compiled._static


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.reshape(int(x.shape[0]), -1) * 2,  # a size made a plain int
        lambda x: x * 2 if x.sum(1).shape[0] > 3 else x - 1,  # an intermediate's size compared
    ],
    ids=["int", "compare_intermediate"],
)
def test_a_baked_size_falls_back_to_a_graph_per_size(fn, capsys):
    compiled = ember.compile(fn, dynamic=True)
    logs.set_logs(recompiles=True)
    try:
        for n in (4, 5, 2, 3, 4):
            x = ember.randn(n, 2)
            _close(compiled(x), fn(x))
    finally:
        logs.set_logs(recompiles=False)
    assert compiled._static and compiled._count == 4
    assert "sizes stay static: the code read a size as a Python value" in capsys.readouterr().err


@pytest.mark.parametrize("dynamic", [True, None])
def test_sizes_returned_are_the_calls_sizes(dynamic, capsys):
    """A size among the outputs is a constant of the capture's sizes; it must not be replayed
    for other sizes (it was: a compiled ``x.shape`` kept answering the first size), so the
    sizes stay static, and the user gets plain ints, as eager returns, not the trace's."""

    def f(x):
        return x * 2, x.shape, x.size(0) * 3

    compiled = ember.compile(f, dynamic=dynamic)
    logs.set_logs(recompiles=True)
    try:
        for n in (2, 3, 4, 5, 4):
            y, shape, tripled = compiled(ember.ones(n, 2))
            assert (tuple(shape), tripled) == ((n, 2), 3 * n)
            assert type(tripled) is int and all(type(d) is int for d in shape)
            assert y.shape == (n, 2)
    finally:
        logs.set_logs(recompiles=False)
    assert compiled._static and compiled._count == 4
    assert "sizes stay static: the code read a size as a Python value (a size returned" in (
        capsys.readouterr().err
    )


def test_a_size_constant_in_the_graph_falls_back():
    def f(x):
        return x.reshape(4, -1) + 1  # 4 is the size of x's dim 0 at the first call

    compiled = ember.compile(f, dynamic=True)
    for n in (4, 8):
        x = ember.randn(n, 3)
        _close(compiled(x), f(x))
    assert compiled._static and compiled._count == 2


def test_dynamic_module_with_gradients():
    model = nn.Sequential(nn.Linear(3, 5), nn.GELU(), nn.Linear(5, 2))
    compiled = ember.compile(model, dynamic=True)
    for n in (4, 6, 9):
        x = ember.randn(n, 3)
        model.zero_grad()
        compiled(x).square().sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).square().sum().backward()
        for a, p in zip(got, model.parameters()):
            _close(a, p.grad)
    assert compiled._compiled._count == 1
