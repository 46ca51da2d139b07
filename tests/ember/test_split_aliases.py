"""split_with_sizes, unsafe_split and unsafe_chunk against PyTorch: each takes only its own kind
of size (split takes an int or a list; these names do not), as function and method, with
PyTorch's TypeError for the other kind, and PyTorch's pieces and node names otherwise."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

CALLS = [
    ("split_with_sizes", ([2, 4],)),
    ("split_with_sizes", ((1, 5),)),
    ("split_with_sizes", (2,)),
    ("split_with_sizes", (2.0,)),
    ("unsafe_split", (2,)),
    ("unsafe_split", ([2, 4],)),
    ("unsafe_split", ((2, 4),)),
    ("unsafe_split", (2.5,)),
    ("unsafe_chunk", (3,)),
    ("unsafe_chunk", (2.0,)),
    ("unsafe_chunk", ([3],)),
]


def _run(lib, as_method: bool, name: str, args):
    x = lib.arange(6.0, requires_grad=True)
    try:
        pieces = getattr(x, name)(*args) if as_method else getattr(lib, name)(x, *args)
    except TypeError as error:
        return "TypeError", str(error)
    return [p.detach().numpy() for p in pieces], [type(p.grad_fn).__name__ for p in pieces]


@pytest.mark.parametrize("as_method", [False, True])
@pytest.mark.parametrize("name, args", CALLS)
def test_split_aliases_as_torch(name, args, as_method):
    ours, theirs = _run(ember, as_method, name, args), _run(torch, as_method, name, args)
    if theirs[0] == "TypeError":
        assert ours == theirs
        return
    assert ours[1] == theirs[1]
    assert len(ours[0]) == len(theirs[0])
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_array_equal(a, b)
