"""Issue 13, batch A, beyond what the OpInfo suite compares: the strides of the strided
factories (OpInfo compares shapes and dtypes of uninitialised tensors only), logspace's values
in every dtype family, and PyTorch's error types and messages for the new names. The same
expression runs on ember and on PyTorch (ember's API is PyTorch's)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

STRIDED = [
    ("empty_strided", lambda m: m.empty_strided((2, 3), (1, 2))),
    ("empty_strided-0", lambda m: m.empty_strided((0, 3), (3, 1))),
    ("empty_strided-zero-stride", lambda m: m.empty_strided((4, 3), (0, 1))),
    ("empty_permuted", lambda m: m.empty_permuted((1, 3, 5), (2, 0, 1))),
    ("empty_permuted-cl", lambda m: m.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1))),
    ("new_empty_strided", lambda m: m.ones(2).new_empty_strided((5, 2), (1, 5))),
]


@pytest.mark.parametrize("make", [c[1] for c in STRIDED], ids=[c[0] for c in STRIDED])
def test_strided_factories_lay_out_memory_as_pytorch(make):
    got, want = make(ember), make(torch)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride()
    assert got.dtype.name == str(want.dtype).split(".")[-1]


LOGSPACE = [
    ("float", lambda m: m.logspace(-3, 2, 11)),
    ("base2", lambda m: m.logspace(0.5, 4, 7, base=2.0)),
    ("int", lambda m: m.logspace(1.5, 3, 4, base=2, dtype=m.int64)),
    ("float64", lambda m: m.logspace(-1, 1, 5, dtype=m.float64)),
    ("one", lambda m: m.logspace(2, 5, 1)),
    ("none", lambda m: m.logspace(2, 5, 0)),
    ("tensors", lambda m: m.logspace(m.tensor(0.5), m.tensor(2), 4)),
    ("scalar_tensor", lambda m: m.scalar_tensor(3)),
    ("scalar_tensor-int", lambda m: m.scalar_tensor(7, dtype=m.int32)),
]


@pytest.mark.parametrize("make", [c[1] for c in LOGSPACE], ids=[c[0] for c in LOGSPACE])
def test_factory_values_match_pytorch(make):
    got, want = make(ember), make(torch)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def _x(m):
    return m.arange(6.0).reshape(2, 3)


REFUSALS = [
    ("sum_to_size", lambda m: _x(m).sum_to_size(3, 2)),
    ("sum_to_size-longer", lambda m: _x(m).sum_to_size(1, 1, 3)),
    ("unravel_index-float", lambda m: m.unravel_index(m.tensor([1.0]), (2, 3))),
    ("unravel_index-negative", lambda m: m.unravel_index(m.tensor([1]), (2, -3))),
    ("nonzero_static-size", lambda m: m.nonzero_static(_x(m), size=-1)),
    ("cauchy_", lambda m: m.empty(3).cauchy_(0, 0)),
    ("exponential_", lambda m: m.empty(3).exponential_(-1)),
    ("geometric_", lambda m: m.empty(3).geometric_(1)),
    ("log_normal_", lambda m: m.empty(3).log_normal_(1, 0)),
    ("chunk_cat-chunks", lambda m: m._chunk_cat([_x(m)], 0, 0)),
    ("chunk_cat-empty", lambda m: m._chunk_cat([m.ones(0, 2)], 0, 2)),
    ("as_strided_scatter", lambda m: m.as_strided_scatter(_x(m), m.ones(2), (3,), (1,))),
]


@pytest.mark.parametrize("call", [c[1] for c in REFUSALS], ids=[c[0] for c in REFUSALS])
def test_refusals_match_pytorch(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(type(want.value)) as got:
        call(ember)
    assert str(got.value) == str(want.value)


def test_functions_of_in_place_methods():
    x = ember.ones(2, 3)
    assert ember.zero_(x) is x and not x.any()
    y = ember.ones(2)
    assert ember.resize_as_(y, x) is y and tuple(y.shape) == (2, 3)
    assert ember.tensor([2.0, 4.0]).__rdiv__(8).tolist() == [4.0, 2.0]


def test_samplers_repeat_under_manual_seed():
    draws = []
    for _ in range(2):
        ember.manual_seed(7)
        x = ember.empty(64)
        draws.append([x.cauchy_().tolist(), x.exponential_(2).tolist(), x.log_normal_().tolist()])
        draws[-1].append(ember.empty(64, dtype=ember.int32).geometric_(0.3).tolist())
    assert draws[0] == draws[1]
