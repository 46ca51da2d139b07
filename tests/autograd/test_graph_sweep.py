"""The backward graph of ~180 common expressions against PyTorch's: the node types and names,
next_functions (nodes, output indices, None entries) two levels down, and the values of every
``_saved_*`` attribute PyTorch's node has. Differences that remain are data below, each with
its reason; the tests fail when one is fixed too (so the lists stay true)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .graph_cases import CASES, leaves

# Graphs that differ from PyTorch's, and why.
GRAPHS_DIFFER = {
    "ce probs": "probability targets: PyTorch and ember compose the loss from different parts",
    "ce smoothing": "label smoothing: PyTorch and ember compose the loss from different parts",
    "einsum": "ember contracts with its own plan of permutes and bmm (PyTorch's is another)",
    "index_put": "ember's out-of-place index_put is a clone and an index_put_ (CopySlices)",
    "sdpa": "ember's attention is matmuls and a softmax; PyTorch's CPU one is one flash node",
}
_LAPACK = "ember's formula keeps what it needs, not LAPACK's factors"
# _saved_* attributes of PyTorch's node that ember's does not have, and why.
SAVED_MISSING = {
    "det": ({"_saved_LU", "_saved_pivots"}, _LAPACK),
    "solve": ({"_saved_LU", "_saved_pivots"}, _LAPACK),
    "svdvals": (
        {
            "_saved_S",
            "_saved_S_sym_argsize_minus_1",
            "_saved_U",
            "_saved_Vh",
            "_saved_full_matrices",
        },
        _LAPACK,
    ),
    "max_pool2d": ({"_saved_self"}, "ember's formula needs the input's shape, not its values"),
    "index_add": ({"_saved_source"}, "ember's formula needs the source's shape, not its values"),
}
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
    ours = CASES[name](ember, *leaves(ember))
    theirs = CASES[name](torch, *leaves(torch))
    return ours, theirs


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_matches_torch(name):
    ours, theirs = _build(name)
    if name in GRAPHS_DIFFER:
        assert _graph(ours) != _graph(theirs), f"now the same as PyTorch's: drop '{name}'"
        return
    assert _graph(ours) == _graph(theirs)


def _same(ours, theirs) -> bool:
    if isinstance(theirs, torch.Tensor):
        if not isinstance(ours, ember.Tensor) or tuple(ours.shape) != tuple(theirs.shape):
            return False
        a, b = ours.detach().cpu().numpy(), theirs.detach().numpy()
        return a.dtype == b.dtype and np.allclose(a, b, equal_nan=True)
    if isinstance(theirs, (tuple, list)):
        return (
            isinstance(ours, (tuple, list))
            and len(ours) == len(theirs)
            and all(_same(o, t) for o, t in zip(ours, theirs))
        )
    if isinstance(theirs, bool) or theirs is None or isinstance(theirs, str):
        return type(ours) is type(theirs) and ours == theirs
    return isinstance(ours, (int, float)) and not isinstance(ours, bool) and ours == theirs


@pytest.mark.parametrize("name", sorted(set(CASES) - set(GRAPHS_DIFFER)))
def test_saved_attributes_match_torch(name):
    ours, theirs = _build(name)
    node, expected = ours.grad_fn, theirs.grad_fn
    missing, differ = set(), {}
    for attribute in sorted(a for a in dir(expected) if a.startswith("_saved_")):
        try:
            value = getattr(node, attribute)
        except AttributeError:
            missing.add(attribute)
            continue
        if attribute not in RANDOM.get(name, ()) and not _same(value, getattr(expected, attribute)):
            differ[attribute] = (value, getattr(expected, attribute))
    assert set(differ) == SAVED_DIFFER.get(name, (set(), ""))[0], differ
    assert missing == SAVED_MISSING.get(name, (set(), ""))[0]
