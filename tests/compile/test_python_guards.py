"""Guards on the Python a capture read (compiler/python_guards.py, module_probe.py): a global,
a closure variable, a submodule or a module's tensor attribute rebound after the first call
recompiles, so the compiled result stays eager's, as torch.compile's guards keep it. Before these
guards every case below replayed the first capture and returned its numbers."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import logs

HERE = sys.modules[__name__]
SCALE = 2.0
OFFSET = ember.ones(3)
FLAG = True
ACTIVATION = ember.relu


class Config:
    def __init__(self):
        self.shift = 1.0
        self.name = "config"


CONFIG = Config()
SIZES = [2.0, 3.0]
OPTIONS = {"shift": 1.0}


def _scaled(x):
    return x * SCALE


def _offset(x):
    return x + OFFSET


def _branch(x):
    return x + 1 if FLAG else x - 1


def _activated(x):
    return ACTIVATION(x - 2)


def _shifted(x):
    return x + CONFIG.shift


def _listed(x):
    return x * SIZES[0] + OPTIONS["shift"]


def _helper(x):
    return x * SCALE + 1


def _through_helper(x):
    return _helper(x).tanh()


def _closure():
    k = 2.0

    def fn(x):
        return x * k

    def set_k(value):
        nonlocal k
        k = value

    return fn, set_k


class _WithChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x - 2)


class _WithTensor(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = ember.ones(3)

    def forward(self, x):
        return x + self.c


class _WithHelper(nn.Module):
    """A ``forward`` that reads a global through another method."""

    def forward(self, x):
        return self.helper(x)

    def helper(self, x):
        return x * SCALE


def _list_item_change(monkeypatch):
    """``SIZES[0] = 5.0`` on a copy bound for this test (monkeypatch restores the binding)."""
    monkeypatch.setattr(HERE, "SIZES", list(SIZES))
    return lambda: HERE.SIZES.__setitem__(0, 5.0)


def _calls(compiled) -> int:
    return getattr(compiled, "_compiled", compiled)._count


def _rebind(monkeypatch, name, value):
    return lambda: monkeypatch.setattr(HERE, name, value)


# (what is compiled, how it changes) -> after the change the result must be eager's
CASES = {
    "float global": lambda mp: (_scaled, _rebind(mp, "SCALE", 3.0)),
    "tensor global": lambda mp: (_offset, _rebind(mp, "OFFSET", ember.full((3,), 5.0))),
    "bool global choosing a branch": lambda mp: (_branch, _rebind(mp, "FLAG", False)),
    "function global": lambda mp: (_activated, _rebind(mp, "ACTIVATION", ember.neg)),
    "config object attribute": lambda mp: (_shifted, lambda: mp.setattr(CONFIG, "shift", 4.0)),
    "global read by a helper": lambda mp: (_through_helper, _rebind(mp, "SCALE", -1.5)),
    "global list item": lambda mp: (_listed, _list_item_change(mp)),
    "global dict item": lambda mp: (_listed, lambda: mp.setitem(OPTIONS, "shift", 9.0)),
    "closure variable": lambda mp: (lambda fn_set: (fn_set[0], lambda: fn_set[1](7.0)))(_closure()),
    "submodule replaced": lambda mp: (lambda m: (m, lambda: setattr(m, "act", nn.Identity())))(
        _WithChild()
    ),
    "module tensor attribute": lambda mp: (
        lambda m: (m, lambda: setattr(m, "c", ember.full((3,), 4.0)))
    )(_WithTensor()),
    "global read by a module method": lambda mp: (_WithHelper(), _rebind(mp, "SCALE", 5.0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_rebinding_recompiles_and_matches_eager(case, monkeypatch):
    fn, change = CASES[case](monkeypatch)
    compiled = ember.compile(fn)
    x = ember.ones(3)
    np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy())
    compiled(x)
    assert _calls(compiled) == 1  # nothing changed: the replay
    before = fn(x).numpy()
    change()
    after = fn(x).numpy()
    assert not np.allclose(before, after)  # the change matters to eager
    np.testing.assert_allclose(compiled(x).numpy(), after)
    assert _calls(compiled) == 2
    compiled(x)
    assert _calls(compiled) == 2  # the new entry replays


def test_an_equal_scalar_rebound_does_not_recompile(monkeypatch):
    compiled = ember.compile(_scaled)
    x = ember.ones(3)
    compiled(x)
    monkeypatch.setattr(HERE, "SCALE", float("2.0"))  # another object, equal value
    monkeypatch.setattr(CONFIG, "name", "".join(["con", "fig"]))
    compiled(x)
    assert compiled._count == 1


def test_recompile_reason_and_guard_log_name_the_global(monkeypatch, capsys):
    compiled = ember.compile(_scaled)
    x = ember.ones(3)
    logs.set_logs(recompiles=True, guards=True)
    try:
        compiled(x)
        monkeypatch.setattr(HERE, "SCALE", 3.0)
        compiled(x)
    finally:
        logs.set_logs(recompiles=False, guards=False)
    err = capsys.readouterr().err
    assert "CONSTANT_MATCH: G['SCALE'] == 2.0" in err
    assert "- 0/0: G['SCALE'] == 2.0" in err


def test_a_deleted_global_recompiles_and_raises_as_eager(monkeypatch):
    compiled = ember.compile(_scaled)
    compiled(ember.ones(3))
    monkeypatch.delattr(HERE, "SCALE")
    with pytest.raises(NameError, match="SCALE"):
        compiled(ember.ones(3))


def test_a_submodule_swap_names_the_attribute(capsys):
    model = _WithChild()
    compiled = ember.compile(model)
    x = ember.ones(3)
    compiled(x)
    model.act = nn.GELU()
    logs.set_logs(recompiles=True)
    try:
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6)
    finally:
        logs.set_logs(recompiles=False)
    assert "_WithChild.act changed (guarded by identity)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "change",
    [
        lambda m: setattr(m, "weight", nn.Parameter(ember.ones(40, 3))),  # another shape
        lambda m: m.double(),  # the same Parameter objects, another dtype
        lambda m: setattr(m, "bias", None),
    ],
    ids=["replaced", "double", "bias-removed"],
)
def test_a_parameter_changed_under_a_compiled_module_is_guarded(change):
    """The programs allocate outputs of the captured sizes: a parameter of another shape or
    dtype read through the module must capture again (before, a (1, 40) product was written
    into a (1, 2) output, and a float64 weight was read as float32), giving eager's result or
    eager's error."""
    model = nn.Linear(3, 2)
    compiled = ember.compile(model)
    x = ember.ones(1, 3)
    for _ in range(2):
        compiled(x)
    change(model)
    try:
        want = model(x)
    except RuntimeError as eager_error:
        with pytest.raises(RuntimeError, match=str(eager_error).split(":")[-1].strip()[:30]):
            compiled(x)
        return
    got = compiled(x)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, i):
        return self.head(self.emb(i))


def test_a_parameter_replaced_by_one_of_the_same_sizes_is_guarded(capsys):
    """Untying weights after the first call: the replay held the tied Parameter (before, it
    returned the tied model's numbers)."""
    model = _Tied()
    compiled = ember.compile(model)
    i = ember.randint(0, 10, (2, 3))
    compiled(i)
    model.head.weight = nn.Parameter(ember.randn(10, 4))
    logs.set_logs(recompiles=True)
    try:
        got = compiled(i)
    finally:
        logs.set_logs(recompiles=False)
    np.testing.assert_allclose(got.detach().numpy(), model(i).detach().numpy(), rtol=1e-6)
    assert "Linear.weight changed (guarded by identity)" in capsys.readouterr().err


class _Shifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(2, 2)

    def forward(self, x):
        y = self.l(x)
        return y + self.shift if hasattr(self, "shift") else y


def test_a_buffer_registered_after_the_capture_is_guarded():
    """A new key in ``_buffers`` (or ``_parameters``), even the first, captures again: the
    ``hasattr`` the capture saw is False (before, replays ignored the buffer)."""
    model = _Shifted()
    compiled = ember.compile(model)
    x = ember.randn(1, 2)
    compiled(x)
    model.register_buffer("shift", ember.ones(2))
    np.testing.assert_allclose(
        compiled(x).detach().numpy(), (model.l(x) + 1).detach().numpy(), rtol=1e-6
    )
    model.register_parameter("extra", nn.Parameter(ember.ones(1)))  # a new key, non-empty dict
    model.l.register_buffer("unused", ember.zeros(1))
    np.testing.assert_allclose(
        compiled(x).detach().numpy(), (model.l(x) + 1).detach().numpy(), rtol=1e-6
    )
    assert sum(len(es) for es in compiled._compiled._cache.values()) == 3


def test_a_list_argument_is_not_guarded_by_its_items():
    """The items of an argument list are the call's guard key already: new tensors in it at
    each call replay, not recompile."""

    def total(xs):
        return xs[0] + xs[1]

    compiled = ember.compile(total)
    for i in range(4):
        xs = [ember.ones(2) * i, ember.ones(2)]
        np.testing.assert_allclose(compiled(xs).numpy(), total(xs).numpy())
    assert compiled._count == 1


class _WithOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = nn.Linear(2, 2)

    def forward(self, x):
        return self.out(x)


def test_an_attribute_name_is_not_a_global_guard(monkeypatch):
    """``self.out`` puts ``out`` among the code's names, beside globals: a script's loop at
    module level rebinding a global ``out = model(x)`` at every step must not recompile (it
    did, up to the limit, then ran eagerly): only names the code loads as globals are guarded."""
    monkeypatch.setattr(HERE, "out", None, raising=False)
    compiled = ember.compile(_WithOut())
    for _ in range(10):
        monkeypatch.setattr(HERE, "out", compiled(ember.ones(1, 2)))
    assert _calls(compiled) == 1
