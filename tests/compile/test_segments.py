"""Graph breaks inside one function body (compiler/segments.py): compiled regions around the
eager piece, results equal to eager's at every call; Python side effects run at every call
(compiler/effects.py)."""

from __future__ import annotations

import logging
import random
import time

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.compiler import config
from ember.compiler.exc import Unsupported


def _fns(lib):
    """The same functions over ember or torch (for explain's counts)."""

    def item_mid(x):
        y = x.sin() * 2
        s = y.sum().item()
        return (y + s).exp()

    def branch_mid(x):
        y = x.sin()
        if y.sum() > 0:
            y = y * 2
        else:
            y = y - 1
        return y.cos()

    def print_mid(x):
        y = x.cos()
        print("shape", y.shape)
        z = y * 2
        print(z)
        return z + 1

    def tolist_mid(x):
        y = x.abs()
        n = len(y.tolist())
        return y * n

    def loop(x):
        for _ in range(3):
            x = x * 2
            if x.sum() > 4:
                break
            x = x + 1
        return x.tanh()

    return {f.__name__: f for f in (item_mid, branch_mid, print_mid, tolist_mid, loop)}


EMBER, TORCH = _fns(ember), _fns(torch)


def _entry(compiled):
    (entry,) = [e for es in compiled._cache.values() for e in es]
    return entry


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", list(EMBER))
def test_compiled_segments_match_eager(name, capsys):
    fn = EMBER[name]
    compiled = ember.compile(fn)
    rng = np.random.default_rng(0)
    for _ in range(8):  # both branches and every loop length come up
        x = ember.tensor(rng.standard_normal(5), dtype=ember.float32)
        _close(compiled(x), fn(x))
    paths = _entry(compiled).paths
    assert paths.recorded >= 1 and paths.replays >= 1
    if name != "item_mid":  # its constant changes at each call: a new path each time
        recorded = paths.recorded
        for _ in range(3):
            x = ember.tensor(rng.standard_normal(5), dtype=ember.float32)
            _close(compiled(x), fn(x))
        if name != "loop":
            assert paths.recorded == recorded  # every path seen: regions replayed only


def test_branch_is_guarded_by_the_path_taken():
    fn = EMBER["branch_mid"]
    compiled = ember.compile(fn)
    up, down = ember.ones(4), -ember.ones(4)
    for x in (up, up, down, down, up, down):
        _close(compiled(x), fn(x))
    paths = _entry(compiled).paths
    # two regions before the branch (one per call kind would be one: same ops) and one after
    # each side: sin+sum+gt, then mul+cos or sub+cos
    assert paths.recorded == 3
    assert paths.replays == 2 * 6 - 2 - 3  # calls 2..6, two segments each, less recordings


@pytest.mark.parametrize("name", ["item_mid", "branch_mid", "print_mid", "tolist_mid"])
def test_explain_counts_match_torch(name, capsys):
    expected = torch._dynamo.explain(TORCH[name])(torch.ones(4))
    got = ember._dynamo.explain(EMBER[name])(ember.ones(4))
    assert (got.graph_count, got.graph_break_count) == (
        expected.graph_count,
        expected.graph_break_count,
    )
    assert len(got.break_reasons) == len(expected.break_reasons)


def test_fullgraph_print_names_the_argument_types():
    with pytest.raises(Unsupported) as info:
        ember.compile(EMBER["print_mid"], fullgraph=True)(ember.ones(3))
    assert info.value.gb_type == "Failed to trace builtin operator"
    assert "['str', 'Size']" in str(info.value) and "print_mid" in str(info.value)


def test_print_runs_at_every_call(capsys):
    compiled = ember.compile(EMBER["print_mid"])
    for _ in range(3):
        compiled(ember.ones(2))
    assert capsys.readouterr().out.count("shape ember.Size([2])") == 3


def test_in_place_update_after_a_break_happens_once_per_call():
    counter = ember.zeros(1)

    def f(x):
        y = x * x.sum().item()
        counter.add_(1)
        return y

    compiled = ember.compile(f)
    for _ in range(4):
        compiled(ember.ones(2))
    assert counter.item() == 4


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x[x > 0] * 2,  # indexing's nonzero, then an .item() break
        lambda x: ember.masked_select(x.sin().cos(), x.sum() * x > 0) + x.sum().item(),
        lambda x: ember.nonzero((x * x.sum().item()) > 0) + 1,
    ],
    ids=["bool_index", "masked_select", "nonzero"],
)
def test_ops_sized_by_the_values_run_at_every_call(fn):
    # A pending tensor takes its sizes from an earlier run of the same ops: for nonzero and
    # masked_select those are the values' (a mask's count of True), so they are not deferred.
    compiled = ember.compile(fn)
    for values in ([1.0, -1.0, 2.0, 3.0], [1.0, 1.0, 1.0, -2.0], [-1.0, -1.0, -1.0, 5.0],
                   [2.0, 2.0, 2.0, 2.0], [-1.0, -2.0, -1.0, -1.0]):  # fmt: skip
        x = ember.tensor(values)
        got, want = compiled(x), fn(x)
        assert got.shape == want.shape, values
        _close(got, want)


def test_container_arguments_are_the_callers():
    """A dict or list argument the function fills (an accumulator of losses, a dict of
    outputs) is the caller's object at every call, as in eager (the capture used to call the
    function with a rebuilt copy, so the first call's writes were lost)."""

    def fill(x, outputs, losses):
        outputs["y"] = x * 2
        outputs["calls"] = outputs.get("calls", 0) + 1
        losses.append(x.sum())
        return x + 1

    compiled = ember.compile(fill)
    outputs, losses = {}, []
    for i in range(4):
        x = ember.full((3,), float(i))
        compiled(x, outputs, losses)
        _close(outputs["y"], x * 2)
    assert outputs["calls"] == 4
    assert [t.item() for t in losses] == [0.0, 3.0, 6.0, 9.0]


@pytest.mark.parametrize(
    "draw",
    [lambda: random.random(), lambda: np.random.rand(), lambda: float(time.perf_counter_ns())],
    ids=["random.random", "np.random.rand", "time.perf_counter_ns"],
)
def test_impure_python_calls_give_new_values_at_every_call(draw):
    """A replay runs no Python, so a graph kept the capture's random number or clock reading
    (every call returned the same value); these calls are graph breaks now."""
    compiled = ember.compile(lambda x: x * draw())
    x = ember.ones(1, dtype=ember.float64)
    values = [compiled(x).item() for _ in range(4)]
    assert len(set(values)) == 4, values
    with pytest.raises(Unsupported, match="Call to an impure Python function"):
        ember.compile(lambda x: x * draw(), fullgraph=True)(x)


class _Noisy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1


def test_nested_modules_without_grad():
    model = nn.Sequential(nn.Linear(4, 4), _Noisy(), nn.Sequential(nn.Linear(4, 4), nn.Tanh()))
    compiled = ember.compile(model)
    rng = np.random.default_rng(1)
    with ember.no_grad():
        for _ in range(6):
            x = ember.tensor(rng.standard_normal((2, 4)), dtype=ember.float32)
            _close(compiled(x), model(x))
    paths = _entry(compiled._compiled).paths
    assert paths is not None and paths.replays >= 4


def test_random_draws_match_eager():
    def f(x):
        y = nn.functional.dropout(x.sin(), 0.5, training=True)
        if y.sum() > 0:
            y = y * 2
        return y + ember.randn(4)

    compiled = ember.compile(f)
    for seed in range(4):
        x = ember.randn(4)
        ember.manual_seed(seed)
        got = compiled(x)
        ember.manual_seed(seed)
        _close(got, f(x))


def test_gradients_through_a_broken_function_match_eager():
    def f(x, w):
        y = (x * w).tanh()
        if y.sum() > 0:
            y = y * 3
        return (y * y).sum()

    compiled = ember.compile(f)
    rng = np.random.default_rng(2)
    for _ in range(3):
        data = rng.standard_normal(5)
        x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
        w = ember.tensor(data[::-1].copy(), dtype=ember.float64, requires_grad=True)
        tx = torch.tensor(data, requires_grad=True)
        tw = torch.tensor(data[::-1].copy(), requires_grad=True)
        compiled(x, w).backward()
        ty = (tx * tw).tanh()
        if ty.sum() > 0:
            ty = ty * 3
        (ty * ty).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_new_paths_over_the_limit_run_eagerly(limit, caplog):
    config.recompile_limit = 1  # four recorded regions for the segments of a guard set

    def f(x):
        return (x * x.sum().item()).exp()  # a new constant, so a new path, at each call

    compiled = ember.compile(f)
    with caplog.at_level(logging.WARNING, logger="ember._dynamo"):
        for i in range(10):
            x = ember.full((3,), 0.1 * i)
            _close(compiled(x), f(x))
    assert _entry(compiled).paths.recorded == 4
    warnings = [r.getMessage() for r in caplog.records if "recompile_limit" in r.getMessage()]
    assert len(warnings) == 1 and "graph breaks" in warnings[0]


# ---- side effects ------------------------------------------------------------------------
_LOG: list = []


class _Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.count = 0

    def forward(self, x):
        self.count += 1
        y = self.lin(x).relu()
        _LOG.append(y)
        return y * 2


def test_side_effects_happen_at_every_call():
    _LOG.clear()
    model = _Counting()
    compiled = ember.compile(model)
    with ember.no_grad():
        for i in range(4):
            x = ember.randn(2, 3)
            out = compiled(x)
            assert model.count == i + 1 and len(_LOG) == i + 1
            _close(out, _LOG[-1] * 2)
            _close(_LOG[-1], model.lin(x).relu())
    entry = _entry(compiled._compiled)
    assert entry.region is None and entry.paths.replays == 2  # call 1 captures, 2 records


def test_global_rebinding_is_a_side_effect():
    def f(x):
        global _LAST
        _LAST = x.sum()
        return x * 2

    compiled = ember.compile(f)
    for value in (1.0, 2.0, 3.0):
        compiled(ember.full((2,), value))
        assert _LAST.item() == 2 * value


_LAST = None


def test_no_side_effect_keeps_one_region():
    """Neither ember's modules nor a local list of outputs count as side effects."""

    def f(x):
        outs = []
        for layer in (model[0], model[1]):
            x = layer(x)
            outs.append(x)
        return ember.cat(outs, -1)

    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    compiled = ember.compile(f)
    for _ in range(3):
        x = ember.randn(4, 3)
        compiled(x)
    entry = _entry(compiled)
    assert entry.region is not None and entry.paths is None


@pytest.mark.parametrize("name", ["item_mid", "branch_mid"])
def test_segments_on_each_device(name, device):
    fn = EMBER[name]
    compiled = ember.compile(fn)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = ember.tensor(rng.standard_normal(6), dtype=ember.float32, device=device)
        np.testing.assert_allclose(
            compiled(x).cpu().numpy(), fn(x).cpu().numpy(), rtol=1e-5, atol=1e-6
        )
    assert _entry(compiled).paths.replays >= 1


def test_ops_before_an_exception_happen_as_in_eager():
    counter = ember.zeros(1)
    fail = [False]

    def f(x):
        y = x * x.sum().item()
        counter.add_(1)  # deferred: no read of it before the raise
        if fail[0]:
            raise ValueError("stop")
        return y

    compiled = ember.compile(f)
    compiled(ember.ones(2))  # the capture
    compiled(ember.ones(2))  # the segments recorded
    fail[0] = True
    for i in range(2):
        with pytest.raises(ValueError):
            compiled(ember.ones(2))
        assert counter.item() == 3 + i


_HELPED: list = []


def _helper(y):
    _HELPED.append(tuple(y.shape))  # a side effect in a function the compiled one calls
    return y * 2


def test_side_effect_in_a_called_helper():
    _HELPED.clear()

    def f(x):
        return _helper(x.sin()) + 1

    compiled = ember.compile(f)
    for n in (3, 3, 3):
        x = ember.randn(n)
        _close(compiled(x), (x.sin() * 2) + 1)
    assert _HELPED == [(3,)] * 3
