"""Issue 16's next script gaps against torch.jit.script on the same source (and eager Python):
``return`` inside loops, ``Tensor.tolist()``, ``Union``/``Any``; each also saved and loaded."""
# ruff: noqa: UP006, UP035 - typing.List, as TorchScript sources spell it

from __future__ import annotations

import io
import re
from typing import List, Union

import numpy as np
import pytest
import torch

import ember

from .script_gaps import (
    Scaled,
    early_exit_stack,
    loop_returns,
    numbers_and_objects,
    searching_module,
    tolists,
    unions,
)
from .test_script import assert_same, to_lib

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
ONE, TWO = np.ones(2, np.float32), np.full(3, 0.5, np.float32)

LOOP_CALLS = {
    "first_hit": [(ONE, 5), (ONE, 1), (ONE, 3)],
    "falls_off": [(ONE, 5), (ONE, 1)],
    "nested_loops": [(ONE, 10), (ONE, 3), (ONE, 0)],
    "over_list": [([1.0, 3.0, 7.0], 2.0), ([1.0], 2.0), ([5.0, 1.0], 2.0), ([], 0.0)],
    "while_true": [(ONE,), (np.full(2, 60, np.float32),)],
    "loop_in_branch": [(ONE, 5, True), (ONE, 5, False), (ONE, 2, True)],
    "annotated": [(10,), (2,)],
    "one_trip": [(ONE, 3), (ONE, 0)],
    "after_break": [(ONE, 9), (TWO, 9), (TWO, 2), (ONE, 0)],
}


def _check(mine, theirs, eager, calls):
    for args in calls:
        want = theirs(*(to_lib(a, torch) for a in args))
        assert_same(mine(*(to_lib(a, ember) for a in args)), want)
        if eager is not None:
            assert_same(eager(*(to_lib(a, ember) for a in args)), want)


def _roundtrip(scripted):
    buffer = io.BytesIO()
    ember.jit.save(scripted, buffer)
    return ember.jit.load(io.BytesIO(buffer.getvalue()))


@pytest.mark.parametrize("name", sorted(LOOP_CALLS))
def test_return_inside_loops_matches_torch_script(name):
    mine_fn, their_fn = loop_returns(ember)[name], loop_returns(torch)[name]
    mine, theirs = ember.jit.script(mine_fn), torch.jit.script(their_fn)
    mine.graph.lint()
    assert mine.graph.findAllNodes("prim::Loop")
    _check(mine, theirs, mine_fn, LOOP_CALLS[name])
    _check(_roundtrip(mine), theirs, mine_fn, LOOP_CALLS[name])


def test_return_inside_loop_result_types_follow_torch():
    for name in ("falls_off", "first_hit", "nested_loops"):
        mine = ember.jit.script(loop_returns(ember)[name])
        theirs = torch.jit.script(loop_returns(torch)[name])
        mine_out = mine.graph.outputs()[0].type().annotation()
        their_out = str(next(theirs.graph.outputs()).type())
        assert mine_out == their_out, name


def test_return_type_mismatch_inside_loop_is_an_error():
    def bad(x, n: int):
        for i in range(n):
            if i == 1:
                return 1
        return x

    words = "Previous return statement returned a value of type int but this return statement "
    words += "returns a value of type Tensor"
    with pytest.raises(RuntimeError, match=words):
        torch.jit.script(bad)
    with pytest.raises(RuntimeError, match=words):
        ember.jit.script(bad)


def test_return_inside_an_unrolled_module_loop_skips_the_later_layers():
    theirs = early_exit_stack(torch)
    mine = early_exit_stack(ember)
    mine.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    scripted, their_scripted = ember.jit.script(mine), torch.jit.script(theirs)
    x = np.array([[0.5, -1.0]], np.float32)
    loaded = _roundtrip(scripted)
    with torch.no_grad(), ember.no_grad():
        for limit in (0.01, 1.0, 1e6):
            want = their_scripted(torch.tensor(x), limit)
            for run in (scripted, mine, loaded):
                assert_same(run(ember.tensor(x), limit), want)


def test_module_returning_from_loops_and_an_inlined_function():
    mine, theirs = searching_module(ember), torch.jit.script(searching_module(torch))
    scripted = ember.jit.script(mine)
    calls = [(ONE, [1, 3]), (ONE, [3]), (ONE, [5]), (ONE, [0, 0, 0, 3])]
    _check(scripted, theirs, mine, calls)
    _check(_roundtrip(scripted), theirs, mine, calls)


TOLIST_CALLS = {
    "floats": [(np.arange(3, dtype=np.float32),), (np.zeros(0, np.float64),)],
    "int_rows": [(np.arange(6).reshape(2, 3),), (np.zeros((0, 2), np.int64),)],
    "returned": [(np.array([True, False]),)],
    "scalar": [(np.array(1.5, np.float64),)],
    "complexes": [
        (np.array([[1 + 2j, 3j]], np.complex64),),
        (np.array([[0.5 - 1j], [2j]], np.complex128),),
    ],
}
TOLIST_ERRORS = [  # (function, input, TorchScript's words)
    ("floats", np.ones((2, 2), np.float32), "list dimension and runtime tensor dimension"),
    ("floats", np.ones(2, np.int64), "element type must match for tolist(): Float vs Long"),
    ("int_rows", np.ones((2, 2), np.int32), "element type must match for tolist(): Long vs Int"),
    ("int_rows", np.ones(2, np.int64), "list dimension and runtime tensor dimension"),
    ("returned", np.ones(2, np.uint8), "element type must match for tolist(): Bool vs Byte"),
    ("scalar", np.ones(1, np.float32), "list dimension and runtime tensor dimension"),
    ("complexes", np.ones((1, 1), np.float32), "must match for tolist(): Bool vs Float"),
    ("complexes", np.ones(2, np.complex64), "list dimension and runtime tensor dimension"),
]


@pytest.fixture(scope="module")
def scripted_tolists():
    mine, theirs = tolists(ember), tolists(torch)
    return {n: (ember.jit.script(f), torch.jit.script(theirs[n]), f) for n, f in mine.items()}


@pytest.mark.parametrize("name", sorted(TOLIST_CALLS))
def test_tolist_matches_torch_script(name, scripted_tolists):
    mine, theirs, eager = scripted_tolists[name]
    assert mine.graph.findAllNodes("prim::tolist")
    _check(mine, theirs, eager, TOLIST_CALLS[name])
    _check(_roundtrip(mine), theirs, eager, TOLIST_CALLS[name])


@pytest.mark.parametrize("name, array, words", TOLIST_ERRORS)
def test_tolist_checks_dim_and_dtype_as_torch_script(name, array, words, scripted_tolists):
    mine, theirs, _ = scripted_tolists[name]
    with pytest.raises(RuntimeError, match=re.escape(words)):
        theirs(torch.tensor(array))
    for run in (mine, _roundtrip(mine)):
        with pytest.raises(RuntimeError, match=re.escape(words)):
            run(ember.tensor(array))


def test_tolist_needs_a_supported_annotation():
    def unannotated(x):
        return x.tolist()

    def strings(x):
        y: List[str] = x.tolist()
        return y

    for fn, words in (
        (unannotated, "Expected type hint for result of tolist()"),
        (strings, "str is not one of the supported element types for tolist"),
    ):
        for lib in (torch, ember):
            with pytest.raises(RuntimeError, match=re.escape(words)):
                lib.jit.script(fn)


UNION_CALLS = {
    "describe": [(3, None), (2.5, "ab"), (ONE, 4), (-1, 7), (TWO, "")],
    "doubled": [(2,), ("a",)],
    "passed": [([1, 2], 1), ("s", 2), (ONE, 3), (None, 1), (1.5, 0)],
    "tensor_or_list": [(ONE, 2.0), ([1, 2, 3], 0.5)],
}


@pytest.fixture(scope="module")
def scripted_unions():
    mine, theirs = unions(ember), unions(torch)
    return {n: (ember.jit.script(f), torch.jit.script(theirs[n]), f) for n, f in mine.items()}


@pytest.mark.parametrize("name", sorted(UNION_CALLS))
def test_union_and_any_match_torch_script(name, scripted_unions):
    mine, theirs, eager = scripted_unions[name]
    mine.graph.lint()
    _check(mine, theirs, eager, UNION_CALLS[name])
    _check(_roundtrip(mine), theirs, eager, UNION_CALLS[name])


def test_isinstance_on_a_union_is_a_run_time_test(scripted_unions):
    mine = scripted_unions["describe"][0]
    assert mine.graph.findAllNodes("prim::isinstance", recurse=True)
    assert "Union[" in mine.graph.inputs()[0].type().annotation()


@pytest.mark.parametrize("args", [("bad", None), (1, 2.5), (ONE, ONE)])
def test_union_argument_mismatch_is_torch_scripts_error(args, scripted_unions):
    mine, theirs, _ = scripted_unions["describe"]
    lines = []
    for run, lib in ((theirs, torch), (mine, ember)):  # loaded graphs check no types
        with pytest.raises(RuntimeError) as caught:
            run(*(to_lib(a, lib) for a in args))
        lines.append(str(caught.value).strip().splitlines()[0])
    assert "Expected a value of type 'Union[" in lines[0]
    assert lines[1] == lines[0]


NUMBER_CALLS = {
    "doubled": [(3,), (1.5,)],
    "bumped": [(3,), (2.5,)],
    "mixed": [(3, 2), (1.5, 3)],
}


@pytest.mark.parametrize("name", sorted(NUMBER_CALLS))
def test_union_of_numbers_is_a_scalar_in_arithmetic_as_torch_script(name):
    mine_fn, their_fn = numbers_and_objects(ember)[name], numbers_and_objects(torch)[name]
    mine, theirs = ember.jit.script(mine_fn), torch.jit.script(their_fn)
    eager = None if name == "bumped" else mine_fn  # Python does not truncate 3.5 to int
    _check(mine, theirs, eager, NUMBER_CALLS[name])
    _check(_roundtrip(mine), theirs, eager, NUMBER_CALLS[name])


def test_union_with_bool_is_not_a_number_as_torch_script():
    def bad(x: Union[int, bool]) -> int:  # noqa: UP007 - TorchScript's spelling
        return x + 1

    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="Arguments for call are not valid"):
            lib.jit.script(bad)


def test_user_class_objects_in_and_out_of_a_scripted_function():
    fns = numbers_and_objects(ember)
    theirs = numbers_and_objects(torch)
    applied, made = ember.jit.script(fns["applied"]), ember.jit.script(fns["made"])
    their_applied, their_made = (
        torch.jit.script(theirs["applied"]),
        torch.jit.script(theirs["made"]),
    )
    assert applied.graph.inputs()[0].type().annotation() == "Scaled"
    want = their_applied(Scaled(3, torch.full((2,), 0.5)), torch.ones(2))
    assert_same(applied(Scaled(3, ember.full((2,), 0.5)), ember.ones(2)), want)
    obj, their_obj = made(2, ember.ones(2)), their_made(2, torch.ones(2))
    assert obj.factor == their_obj.factor == 3
    assert_same(obj.weight, their_obj.weight)
    # the object made by one scripted function goes into another
    assert_same(applied(obj, ember.ones(2)), their_applied(their_obj, torch.ones(2)))
