"""``@ember.jit.interface`` (module and class interfaces) and ``@ember.jit._overload`` /
``_overload_method`` against torch.jit.script of the same source (tests/jit/
script_interfaces.py, run once per library): calls through an interface slot run the module
the slot holds, also one assigned after scripting and after save/load; overloads pick their
declaration by the argument types; refusals are TorchScript's."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ember

from .script_checks import refused_alike, roundtrip
from .test_script import assert_same

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")


def _load(lib):
    name = f"tests.jit._script_interfaces_{lib.__name__}"
    if name not in sys.modules:
        path = Path(__file__).with_name("script_interfaces.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        module.lib = lib
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


MINE, THEIRS = _load(ember), _load(torch)
X = np.arange(4, dtype=np.float32).reshape(2, 2)


def _same_weights(mine, theirs):
    for p, q in zip(mine.parameters(), theirs.parameters()):
        q.data.copy_(torch.from_numpy(p.detach().numpy().copy()))


def _message(error) -> str:
    """The first line, without the module path and compilation unit TorchScript adds."""
    first = str(error).strip().splitlines()[0]
    first = re.sub(r" \(of Python compilation unit at: 0x[0-9a-f]+\)", "", first)
    return re.sub(r"__torch__\.(?:\w+\.)*(\w+)", r"__torch__.\1", first)


def _owners():
    mine, theirs = MINE.Owner(MINE.Twice()), THEIRS.Owner(THEIRS.Twice())
    _same_weights(mine, theirs)
    return ember.jit.script(mine), torch.jit.script(theirs)


def test_interface_slot_calls_the_module_it_holds_as_torch_script():
    mine, theirs = _owners()
    assert mine.graph.findAllNodes("prim::CallInterface")
    assert_same(mine(ember.tensor(X)).detach(), theirs(torch.from_numpy(X)).detach())
    shift_mine, shift_theirs = MINE.Shift(), THEIRS.Shift()
    mine.impl = ember.jit.script(shift_mine)
    theirs.impl = torch.jit.script(shift_theirs)
    assert_same(mine(ember.tensor(X)).detach(), theirs(torch.from_numpy(X)).detach())
    loaded = roundtrip(mine)
    assert_same(loaded(ember.tensor(X)).detach(), theirs(torch.from_numpy(X)).detach())
    loaded.impl = roundtrip(ember.jit.script(MINE.Twice()))  # a loaded module fits the slot
    theirs.impl = torch.jit.script(THEIRS.Twice())
    assert_same(loaded(ember.tensor(X)).detach(), theirs(torch.from_numpy(X)).detach())


def test_interface_refusals_match_torch_script():
    refused_alike(MINE.Owner(MINE.Wrong()), THEIRS.Owner(THEIRS.Wrong()), _message)
    scripted_mine, scripted_theirs = _owners()
    for make_mine, make_theirs in (
        (lambda: ember.jit.script(MINE.Wrong()), lambda: torch.jit.script(THEIRS.Wrong())),
        (MINE.Shift, THEIRS.Shift),  # not scripted
    ):
        with pytest.raises(RuntimeError) as theirs:
            scripted_theirs.impl = make_theirs()
        with pytest.raises(RuntimeError) as mine:
            scripted_mine.impl = make_mine()
        assert _message(mine.value) == _message(theirs.value)


def test_class_interface_arguments_take_any_implementing_object():
    assert ember.jit.script(MINE.adders)(3) == torch.jit.script(THEIRS.adders)(3) == [8, 15]
    assert roundtrip(ember.jit.script(MINE.adders))(4) == [9, 20]


def test_overloads_pick_the_declaration_by_argument_types():
    mine = ember.jit.script(MINE.doubles)
    theirs = torch.jit.script(THEIRS.doubles)
    args = (3, 1.5)
    want = theirs(torch.from_numpy(X), *args)
    assert_same(mine(ember.tensor(X), *args), want)
    assert_same(roundtrip(mine)(ember.tensor(X), *args), want)
    assert [v.type().annotation() for v in mine.graph.outputs()[0].node().inputs()] == [
        "Tensor",
        "int",
        "List[int]",
        "float",
        "int",
    ]


def test_overloaded_methods_match_torch_script():
    mine, theirs = ember.jit.script(MINE.Scales()), torch.jit.script(THEIRS.Scales())
    assert_same(mine(ember.tensor(X), 2), theirs(torch.from_numpy(X), 2))
    assert_same(roundtrip(mine)(ember.tensor(X), 2), theirs(torch.from_numpy(X), 2))


@pytest.mark.parametrize("name", ["double", "no_overload"])
def test_overload_refusals_match_torch_script(name):
    refused_alike(getattr(MINE, name), getattr(THEIRS, name), _message)
