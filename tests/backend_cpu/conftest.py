"""Fixtures shared by the CPU kernel tests."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _layouts(a: np.ndarray) -> dict:
    """The values of `a` as ember tensors laid out differently: contiguous, transposed
    (non-contiguous) and flipped (negative strides)."""
    out = {"contiguous": ember.from_numpy(a.copy())}
    if a.ndim >= 2:
        out["transposed"] = ember.from_numpy(np.ascontiguousarray(a.swapaxes(0, 1))).transpose(0, 1)
    if a.ndim >= 1:
        out["flipped"] = ember.from_numpy(np.ascontiguousarray(a[::-1])[::-1])
    return out


@pytest.fixture
def layouts():
    """``layouts(array) -> {name: tensor}``: the array's values in several memory layouts."""
    return _layouts


@pytest.fixture(params=(1, 2, 3))
def threads(request):
    """The CPU kernels' thread count for one test (3: chunks of unequal length), restored after."""
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)
