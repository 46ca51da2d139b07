"""einsum against PyTorch's: the whole backward graph (every node's type, name, next_functions
and ``_saved_*`` values, down to the leaves), the values and float64 gradients, and the errors
of bad equations (type and message), over the paths PyTorch's algorithm takes: diagonals,
unsqueezed missing labels, broadcast size-1 dims, sums before the product, a product without a
summed dim (mul), ellipses, implicit outputs and three operands."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from ..graph_walk import differences

SHAPES = {
    "ij,j->i": [(2, 3), (3,)],
    "ij,jk->ik": [(2, 3), (3, 4)],
    "ij,jk": [(2, 3), (3, 4)],
    "bij,bjk->bik": [(2, 3, 4), (2, 4, 5)],
    "ij,kj->ik": [(2, 3), (4, 3)],
    "i,i->": [(5,), (5,)],
    "i,j->ij": [(3,), (4,)],
    "ij,ij->ij": [(2, 3), (2, 3)],
    "ij,ij->": [(2, 3), (2, 3)],
    "ij,jk->": [(2, 3), (3, 4)],
    "ij,k->k": [(2, 3), (4,)],
    "ij->ji": [(2, 3)],
    "ij->j": [(2, 3)],
    "ij->": [(2, 3)],
    "ii->i": [(3, 3)],
    "ii->": [(3, 3)],
    "iji->j": [(3, 2, 3)],
    "ij,jk->ik broadcast": [(2, 1), (3, 4)],
    "...ij,...jk->...ik": [(2, 1, 3, 4), (5, 4, 2)],
    "...ij,jk": [(2, 3, 4), (4, 5)],
    "b...,b...->b": [(2, 3, 4), (2, 3, 4)],
    "...,...->...": [(), (3,)],
    "ij,jk,kl->il": [(2, 3), (3, 4), (4, 2)],
    "i,j,k->ijk": [(2,), (3,), (2,)],
    "bn,anm,bm->ba": [(2, 3), (4, 3, 5), (2, 5)],
}


# Graphs that differ from PyTorch's, and why (the test fails when one matches).
GRAPHS_DIFFER: dict = {}


def _operands(lib, name):
    r = np.random.RandomState(len(name))
    return [
        lib.tensor(np.asarray(r.randn(*shape)).tolist(), dtype=lib.float64, requires_grad=True)
        for shape in SHAPES[name]
    ]


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_einsum_graph_values_and_gradients_match_torch(name):
    equation = name.split(" ")[0]
    ours, theirs = _operands(ember, name), _operands(torch, name)
    got, want = ember.einsum(equation, *ours), torch.einsum(equation, *theirs)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    found = differences(got.grad_fn, want.grad_fn)
    assert bool(found) == (name in GRAPHS_DIFFER), found
    got.sum().backward()
    want.sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


BAD = [
    ("ij,jk->ik", [(2, 3), (4, 5)]),
    ("ij", [(2, 3, 4)]),
    ("...ij", [(2,)]),
    ("ij->ii", [(2, 3)]),
    ("ij->k", [(2, 3)]),
    ("ij->i.", [(2, 3)]),
    ("ij->......", [(2, 3)]),
    ("i.j", [(2, 3)]),
    ("i......", [(2, 3)]),
    ("i,j", [(2,)]),
    ("i", [(2,), (2,)]),
    ("i$", [(2,)]),
    ("ij->i$", [(2, 3)]),
    ("ii", [(2, 3)]),
    ("...i,...i", [(2, 3), (4, 3)]),
]


def _error(lib, equation, shapes):
    """(exception type name, message) of the call, None when it runs."""
    try:
        lib.einsum(equation, *(lib.ones(*s) for s in shapes))
    except Exception as error:  # any type: compared with torch's
        return type(error).__name__, str(error)
    return None


@pytest.mark.parametrize("equation, shapes", BAD, ids=[e for e, _ in BAD])
def test_einsum_errors_match_torch(equation, shapes):
    want = _error(torch, equation, shapes)
    assert want is not None
    assert _error(ember, equation, shapes) == want


def test_einsum_takes_no_operand_as_torch():
    with pytest.raises(RuntimeError, match="must provide at least one operand"):
        ember.einsum("i", [])
