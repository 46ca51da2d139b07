"""``Tensor.index_put_`` / ``index_put`` against PyTorch: values, accumulation, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _long(lib, values):
    return lib.tensor(values, dtype=lib.int64)


CASES = [
    ("one-dim", lambda lib: (lib.arange(6.0), (_long(lib, [0, 2]),), lib.tensor([9.0, 8.0]))),
    ("repeats", lambda lib: (lib.zeros(3), (_long(lib, [0, 0, 2]),), lib.tensor(1.0))),
    (
        "two-dims",
        lambda lib: (
            lib.arange(12.0).reshape(3, 4),
            (_long(lib, [0, 2]), _long(lib, [1, 3])),
            lib.tensor([-1.0, -2.0]),
        ),
    ),
    (
        "mask",
        lambda lib: (lib.arange(4.0), (lib.tensor([True, False, True, False]),), lib.tensor(7.0)),
    ),
]


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("name, make", CASES, ids=[c[0] for c in CASES])
def test_index_put_matches_pytorch(name, make, accumulate):
    results = []
    for lib in (torch, ember):
        target, indices, values = make(lib)
        returned = target.index_put_(indices, values, accumulate=accumulate)
        assert returned is target
        fresh, indices, values = make(lib)
        copied = lib.index_put(fresh, indices, values, accumulate=accumulate)
        assert copied is not fresh and fresh.tolist() == make(lib)[0].tolist()
        results.append((np.asarray(target.tolist()), np.asarray(copied.tolist())))
    for want, got in zip(*results):
        np.testing.assert_array_equal(got, want, err_msg=name)


def test_index_put_refuses_what_pytorch_refuses():
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes"):
        x.index_put_((_long(ember, [0]),), ember.ones(1, dtype=ember.float64))
    with pytest.raises(TypeError, match="argument 'values' must be Tensor"):
        x.index_put_((_long(ember, [0]),), 1.0)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x.index_put_((ember.tensor([0.0]),), ember.ones(1))
    for lib in (torch, ember):
        with pytest.raises(TypeError, match="expected Tensor as element 0 in argument 0"):
            lib.zeros(3).index_put_((None,), lib.ones(3))
