"""Lists and dicts in scripted code are references, as in Python and TorchScript: updates
through an index (``xs[0].append(v)``, ``d["k"].append(v)``, ``xs[i][j] = v``) or a second name
are seen everywhere, before and after save/load, and the passes keep them apart. Compared with
torch.jit.script of the same source and with eager Python."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.jit.passes.constant_fold import fold_constants
from ember.jit.passes.cse import eliminate_common_subexpressions

from .script_aliasing import aliasing, history, unmatched_literals
from .script_checks import refused_alike, roundtrip
from .test_script import assert_same, to_lib

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
NAMES = sorted(aliasing(ember))


def _args(name, lib):
    if name == "tensors":
        return [(to_lib(np.arange(3, dtype=np.float32), lib),)]
    return [(0,), (1,), (3,)]


def _torch(fn):
    # TorchScript's optimizing executor loses nested_set's writes (it folds the literal into a
    # constant: [[0, 0], [0, 0]]); its unoptimized run is the reference, as eager Python agrees
    with torch.jit.optimized_execution(False):
        scripted = torch.jit.script(fn)
    return lambda *args: _run_unoptimized(scripted, args)


def _run_unoptimized(scripted, args):
    with torch.jit.optimized_execution(False):
        return scripted(*args)


def _check(mine, name):
    theirs, eager = _torch(aliasing(torch)[name]), aliasing(ember)[name]
    for (mine_args,), (their_args,) in zip(_args(name, ember), _args(name, torch)):
        want = theirs(their_args)
        assert_same(mine(mine_args), want)
        assert_same(mine(mine_args), want)  # a second call starts from fresh lists
        assert_same(eager(mine_args), want)


@pytest.mark.parametrize("name", NAMES)
def test_updates_through_indexes_and_names_match_torch_script(name):
    mine = ember.jit.script(aliasing(ember)[name])
    mine.graph.lint()
    _check(mine, name)
    _check(roundtrip(mine), name)


@pytest.mark.parametrize("name", NAMES)
def test_folding_and_cse_keep_updated_lists_apart(name):
    mine = ember.jit.script(aliasing(ember)[name])
    for _ in range(2):  # before the first call: the code is generated from the passed graph
        fold_constants(eliminate_common_subexpressions(mine.graph))
    mine.graph.lint()
    _check(mine, name)


def test_nested_append_is_an_in_place_node():
    mine = ember.jit.script(aliasing(ember)["nested_append"])
    kinds = [n.kind() for n in mine.graph.all_nodes()]
    assert kinds.count("prim::list_append_") == 3
    assert "prim::add" not in [k for k in kinds if k.startswith("prim::list")]
    loop = mine.graph.findAllNodes("prim::Loop")[0]
    assert not loop.outputs()  # the list is updated in place, not carried


def test_module_attribute_updated_through_an_index_matches_torch_script():
    mine, theirs = ember.jit.script(history(ember)), torch.jit.script(history(torch))
    for n in (1, 2, 5):
        assert_same(mine(n), theirs(n))
    assert mine.seen == theirs.seen == [[3, 2], [0, 1, 5]]
    loaded = roundtrip(mine)
    assert loaded.seen == mine.seen
    assert_same(loaded(4), theirs(4))
    frozen = ember.jit.freeze(loaded.eval())
    assert frozen(3) == theirs(3)  # freezing keeps the attribute it updates


@pytest.mark.parametrize("fn", unmatched_literals(), ids=lambda f: f.__name__)
def test_literals_that_do_not_fit_their_annotation_are_refused_as_torch(fn):
    refused_alike(fn, fn)
