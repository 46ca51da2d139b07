"""Issue 16: Union/Optional refinement (``isinstance`` with ``and``/``or``/``not``/``elif``, a
tuple of classes, early return, ``assert x is not None``), class inheritance and magic methods,
against torch.jit.script on the same source: same results, and both raising where one does."""

import pytest
import torch

import ember

from . import script_refine as programs

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

CALLS = {
    "isinst_and": [(3, 2), (3, -1), (2.5, 1)],
    "elif_chain": [(3,), (2.5,), ("abc",)],
    "early_ret": [(None,), (4,)],
    "assert_nn": [(4,)],
    "isinst_tuple": [(1,), (1.5,), ("a",)],
    "not_isinst": [(1,), ("ab",)],
    "unnarrowed_add": [(1,), (1.5,)],
    "early_isinst": [(3,), ("ab",)],
    "opt_and": [(None, 1), (5, 1), (0, 1)],
    "opt_or": [(None,), (-3,), (4,)],
    "inherit": [(3,)],
    "magic_add": [(1,)],
    "magic_len": [(1,)],
    "magic_getitem": [(1,)],
    "magic_contains": [(3,), (5,)],
    "magic_eq": [(3,), (2,)],
    "magic_lt": [(1,), (5,)],
    "opt_tuple": [(None,), (3,)],
    "union_assert_isinst": [(3,)],
    "magic_sub": [(5,)],
    "magic_ne": [(1,), (2,)],
    "magic_setitem": [(3,)],
    "magic_iadd": [(3,)],
    "magic_iadd_fallback": [(5,)],
    "magic_unary": [(3,)],
    "magic_bool": [(3,), (-2,)],
    "magic_convert": [(3,), (-2,)],
    "magic_str": [(3,)],
    "static_method": [(3,)],
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_refinement_matches_torch_script(name):
    mine, theirs = (
        ember.jit.script(getattr(programs, name)),
        torch.jit.script(getattr(programs, name)),
    )
    for args in CALLS[name]:
        want = theirs(*args)
        got = mine(*args)
        assert got == want and type(got) is type(want), (args, got, want)


def test_failed_assert_raises_in_both():
    mine, theirs = ember.jit.script(programs.assert_nn), torch.jit.script(programs.assert_nn)
    with pytest.raises(Exception, match="AssertionError"):
        theirs(None)
    with pytest.raises(Exception, match="AssertionError"):
        mine(None)


def test_inherited_method_is_refused_by_both():
    """TorchScript compiles a class's own methods only, so ``Child(a).get()`` is refused."""
    with pytest.raises(RuntimeError, match="'get'"):
        torch.jit.script(programs.inherited_method)
    with pytest.raises(Exception, match="'get'"):
        ember.jit.script(programs.inherited_method)


@pytest.mark.parametrize(
    ("name", "mine"),
    [
        ("inherited_init", "is currently not supported"),
        ("union_while", "are not valid"),
        ("magic_radd", "Arguments for call are not valid"),
        ("magic_rmul", "Arguments for call are not valid"),
        ("magic_no_setitem", "object has no attribute or method '__setitem__'. Did you"),
        ("static_through_self", "object has no attribute or method 'double'"),
    ],
)
def test_refused_by_both(name, mine):
    """An inherited ``__init__``; ``x + 1`` where the loop makes ``x`` Optional again;
    ``1 + obj`` (TorchScript has no reflected operators: ``__radd__`` is never called);
    ``obj[i] = v`` on a class without ``__setitem__``."""
    with pytest.raises(RuntimeError):
        torch.jit.script(getattr(programs, name))
    with pytest.raises(Exception, match=mine):
        ember.jit.script(getattr(programs, name))
