"""The backward graph of ~180 common expressions against PyTorch's: the node types and names,
next_functions (nodes, output indices, None entries) two levels down, and the values of every
``_saved_*`` attribute PyTorch's node has. Differences that remain are data below, each with
its reason; the tests fail when one is fixed too (so the lists stay true)."""

from __future__ import annotations

import pytest
import torch

import ember

from ..graph_walk import same
from .graph_cases import CASES, leaves

# Graphs that differ from PyTorch's, and why.
GRAPHS_DIFFER: dict = {}
# _saved_* attributes of PyTorch's node that ember's does not have, and why.
SAVED_MISSING: dict = {}
# Random values: compared by presence only.
RANDOM = {"dropout": {"_saved_other"}}
# _saved_* values that differ from PyTorch's, and why.
SAVED_DIFFER: dict = {}


def _graph(t, depth=2):
    """(type name, name(), ((child, index), ...)) of t.grad_fn, ``depth`` levels down."""

    def node(fn, level):
        if fn is None:
            return None
        if level == 0:
            return (type(fn).__name__, fn.name())
        children = tuple((node(child, level - 1), i) for child, i in fn.next_functions)
        return (type(fn).__name__, fn.name(), children)

    return node(t.grad_fn, depth)


def _build(name):
    """Ember's and torch's output of case ``name``, and ember's leaves: a test holds them as a
    program holds its inputs and parameters (ember's graph refers to a leaf weakly, and
    max_pool2d's and index_add's nodes to their inputs: autograd/saved_weak.py)."""
    held = leaves(ember)
    return CASES[name](ember, *held), CASES[name](torch, *leaves(torch)), held


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_matches_torch(name):
    ours, theirs, _ = _build(name)
    if name in GRAPHS_DIFFER:
        assert _graph(ours) != _graph(theirs), f"now the same as PyTorch's: drop '{name}'"
        return
    assert _graph(ours) == _graph(theirs)


@pytest.mark.parametrize("name", sorted(set(CASES) - set(GRAPHS_DIFFER)))
def test_saved_attributes_match_torch(name):
    ours, theirs, _held = _build(name)
    node, expected = ours.grad_fn, theirs.grad_fn
    missing, differ = set(), {}
    for attribute in sorted(a for a in dir(expected) if a.startswith("_saved_")):
        try:
            value = getattr(node, attribute)
        except AttributeError:
            missing.add(attribute)
            continue
        if attribute not in RANDOM.get(name, ()) and not same(value, getattr(expected, attribute)):
            differ[attribute] = (value, getattr(expected, attribute))
    assert set(differ) == SAVED_DIFFER.get(name, (set(), ""))[0], differ
    assert missing == SAVED_MISSING.get(name, (set(), ""))[0]
