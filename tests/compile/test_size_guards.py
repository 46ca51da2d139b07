"""Guards on comparisons of sizes (compiler/size_guards.py): a dynamic graph stays generic under
``if x.size(0) > 3:`` and recompiles exactly when the comparison's outcome changes, as
torch.compile does."""

from __future__ import annotations

import numpy as np
import torch

import ember
from ember.compiler import logs


def _branchy(x):
    if x.size(0) > 3:
        return (x * 2).tanh()
    return x - 1


def _run(fn, compiled, sizes, cols=4):
    for n in sizes:
        x = np.random.default_rng(n).standard_normal((n, cols))
        out = compiled(ember.tensor(x))
        np.testing.assert_allclose(out.numpy(), fn(torch, torch.tensor(x)).numpy(), rtol=1e-12)


def _torch_graphs(fn, sizes, dynamic, cols=4):
    torch._dynamo.reset()
    counts = torch._dynamo.utils.counters
    counts.clear()
    theirs = torch.compile(fn, backend="eager", dynamic=dynamic)
    for n in sizes:
        theirs(torch.randn(n, cols))
    return counts["stats"]["unique_graphs"]


def _lib(fn):
    """``fn(lib, x)`` from a function of ``x`` written with tensor methods only."""
    return lambda lib, x: fn(x)


SIZES = (5, 6, 7, 2, 3, 9, 2, 8)


def test_a_comparison_guards_instead_of_specialising(capsys):
    compiled = ember.compile(_branchy, dynamic=True)
    logs.set_logs(recompiles=True, guards=True)
    try:
        _run(_lib(_branchy), compiled, SIZES)
    finally:
        logs.set_logs(recompiles=False, guards=False)
    assert compiled._count == 2 == _torch_graphs(_branchy, SIZES, True)
    assert not compiled._static
    err = capsys.readouterr().err
    assert "size guard: x.size()[0] > 3" in err
    assert "size guard: not x.size()[0] > 3" in err
    assert err.count("- 0/0: x.size()[0] > 3  # ") == 1  # one recompile, at the first 2
    assert "sizes stay static" not in err


def test_recompiles_exactly_when_the_outcome_changes():
    compiled = ember.compile(_branchy, dynamic=True)
    counts = []
    for n in (5, 9, 4, 3, 2, 6, 3, 11):
        _run(_lib(_branchy), compiled, (n,))
        counts.append(compiled._count)
    assert counts == [1, 1, 1, 2, 2, 2, 2, 2]


def test_automatic_dynamic_with_a_comparison():
    sizes = (5, 6, 7, 2, 3, 9)
    compiled = ember.compile(_branchy)
    _run(_lib(_branchy), compiled, sizes)
    assert compiled._count == _torch_graphs(_branchy, sizes, None) == 3


def _arithmetic(x, y):
    if x.size(0) * 2 + y.size(0) >= 12 or x.size(0) == y.size(0):
        return x * y.sum(0)
    return x + y.mean(0)


def test_arithmetic_and_equality_of_two_inputs_sizes():
    """Guards on ``2 * x.size(0) + y.size(0) >= 12`` and, where it is false, on
    ``x.size(0) == y.size(0)``: three outcomes met, three graphs. (torch.compile makes four
    here: its symbolic shapes guard differently, so the counts are not compared.)"""
    compiled = ember.compile(_arithmetic, dynamic=True)
    cases = [(5, 4), (4, 4), (2, 4), (3, 6), (2, 3), (3, 3), (6, 2), (2, 2), (4, 2)]
    for n, m in cases:
        rng = np.random.default_rng(n * 10 + m)
        x, y = rng.standard_normal((n, 5)), rng.standard_normal((m, 5))
        out = compiled(ember.tensor(x), ember.tensor(y))
        ref = _arithmetic(torch.tensor(x), torch.tensor(y))
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    assert not compiled._static
    assert compiled._count == 3


def test_the_generic_program_serves_the_guarded_sizes(capsys):
    """Under the guard, the fused size-generic program runs at sizes other than the captured
    one."""
    compiled = ember.compile(_branchy, dynamic=True)
    logs.set_logs(recompiles=True)
    try:
        _run(_lib(_branchy), compiled, (5, 7, 12))
    finally:
        logs.set_logs(recompiles=False)
    assert "one size-generic program for every size" in capsys.readouterr().err
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    assert entry.region.generic is not None
