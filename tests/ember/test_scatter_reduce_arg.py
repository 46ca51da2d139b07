"""scatter(..., reduce=) against PyTorch: a tensor src or a number, 'add' and 'multiply', the
function, the method, the in-place method and out=; PyTorch's refusal of other reductions and
its deprecation warning for a tensor src."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

INDEX = [[0, 1, 0], [2, 0, 2]]


def _pair(dtype: str):
    base = np.arange(1, 13).reshape(3, 4) % 5
    src = (np.arange(6).reshape(2, 3) % 4) + 1
    libs = ((ember, getattr(ember, dtype)), (torch, getattr(torch, dtype)))
    return [
        (lib.tensor(base.tolist(), dtype=d), lib.tensor(src.tolist(), dtype=d)) for lib, d in libs
    ]


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("number", [False, True])
def test_scatter_reduce_argument_matches_torch(dtype, reduce, number, device):
    (e_x, e_src), (t_x, t_src) = _pair(dtype)
    e_x = e_x.to(device)
    e_src = 2.5 if number else e_src.to(device)
    t_src = 2.5 if number else t_src
    e_index, t_index = ember.tensor(INDEX, device=device), torch.tensor(INDEX)
    with _quiet():
        expected = torch.scatter(t_x, 0, t_index, t_src, reduce=reduce)
    with _quiet():
        results = [
            ember.scatter(e_x, 0, e_index, e_src, reduce=reduce),
            e_x.scatter(0, e_index, e_src, reduce=reduce),
            e_x.clone().scatter_(0, e_index, e_src, reduce=reduce),
        ]
        out = ember.empty(e_x.shape, dtype=e_x.dtype, device=device)
        assert ember.scatter(e_x, 0, e_index, e_src, reduce=reduce, out=out) is out
    for got in (*results, out):
        assert got.dtype.name == str(expected.dtype).split(".")[-1]
        assert got.tolist() == expected.tolist()


def test_scatter_reduce_argument_refusals():
    x, index = ember.zeros(3), ember.tensor([0, 1])
    with pytest.raises(RuntimeError, match=r"reduce argument must be either add or multiply\."):
        ember.scatter(x, 0, index, 1.0, reduce="mean")
    with pytest.warns(UserWarning, match=r"reduce argument of torch\.scatter with Tensor src"):
        ember.scatter(x, 0, index, ember.ones(2), reduce="add")


def _quiet():
    """The deprecation warning silenced where a test is not about it."""
    return warnings.catch_warnings(action="ignore")
