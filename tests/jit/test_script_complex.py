"""Complex numbers in scripted code against torch.jit.script of the same source and eager
Python: ``complex(a, b)``, arithmetic with complex, float, int and bool operands, ``abs``,
``==``, ``str``/f-strings, lists and dicts of complex, complex scalars with tensors and
``Tensor.real``/``.imag``; before and after save/load. ``.real`` of a complex scalar is
TorchScript's error."""

from __future__ import annotations

import cmath

import numpy as np
import pytest
import torch

import ember

from .script_checks import refused_alike, roundtrip
from .script_complex import complexes, python_only, refused
from .test_script import assert_same

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
NAMES = sorted(complexes(ember))
TEXT = {"as_text"}  # TorchScript prints a complex as c10 does (1.5-2.j), not as Python


def _arguments(args, lib):
    return tuple(lib.tensor([1.0, -2.0, 0.5]) if a == "tensor" else a for a in args)


def _same(got, want):
    if isinstance(want, complex):
        assert type(got) is complex and cmath.isclose(got, want, rel_tol=1e-12), (got, want)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            _same(got[key], want[key])
    elif isinstance(want, torch.Tensor):
        assert_same(got, want)
    else:
        assert type(got) is type(want) and got == want, (got, want)


@pytest.mark.parametrize("name", NAMES)
def test_complex_values_match_torch_script_and_eager(name):
    fn, args = complexes(ember)[name]
    their_fn, _ = complexes(torch)[name]
    want = torch.jit.script(their_fn)(*_arguments(args, torch))
    mine = ember.jit.script(fn)
    mine.graph.lint()
    for run in (mine, roundtrip(mine)) if name in TEXT else (mine, roundtrip(mine), fn):
        _same(run(*_arguments(args, ember)), want)


def test_complex_nodes_and_types():
    mine = ember.jit.script(complexes(ember)["accumulate"][0])
    assert mine.graph.outputs()[0].type().annotation() == "complex"
    kinds = [n.kind() for n in mine.graph.all_nodes()]
    assert "prim::mul" in kinds and "prim::add" in kinds
    built = ember.jit.script(complexes(ember)["build"][0])
    assert built.graph.findAllNodes("prim::complex")
    assert "complex(" in built.code


def test_complex_constants_save_as_complex():
    def constant(n: int) -> complex:
        return complex(1.5, -2.0) * n

    loaded = roundtrip(ember.jit.script(constant))
    assert loaded(2) == (3 - 4j) and type(loaded(2)) is complex


def test_python_semantics_where_torch_script_mistypes():
    fn = python_only()
    want = fn(1 + 2j, 0.5, 3)
    _same(ember.jit.script(fn)(1 + 2j, 0.5, 3), want)
    _same(roundtrip(ember.jit.script(fn))(1 + 2j, 0.5, 3), want)
    with pytest.raises(RuntimeError, match="unified to float"):
        torch.jit.script(fn)  # it types i / z and z ** 2 as float


@pytest.mark.parametrize("fn", refused(), ids=lambda f: f.__name__)
def test_refused_as_torch_script(fn):
    refused_alike(fn, fn)


def test_complex_arguments_are_checked_as_torch_script():
    fn = complexes(ember)["absolute"][0]
    with pytest.raises(RuntimeError, match="Expected a value of type 'complex'"):
        ember.jit.script(fn)("a")
    assert np.isclose(ember.jit.script(fn)(3 + 4j), 5.0)
