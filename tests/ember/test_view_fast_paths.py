"""The fast paths of view, reshape, t and transpose (dispatcher/kinds/view.py) against
PyTorch: sizes given as ints, one -1, bad sizes, contiguous and transposed inputs, a matrix's
dims spelled either way, degenerate matrices; shapes, strides (where a dim of 0 or 1 leaves
them free), contiguity, offsets and values, and the error types."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (1, 4), (4, 1), (0, 3), (2, 3, 4)]


def _same(got, want):
    assert tuple(got.shape) == tuple(want.shape)
    if min(want.shape, default=2) > 1:  # strides of dims of 0 or 1 are free
        assert tuple(got.stride()) == tuple(want.stride())
    assert got.is_contiguous() == want.is_contiguous()
    assert got.storage_offset() == want.storage_offset()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def _inputs(shape, transposed):
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    t, e = torch.tensor(data), ember.tensor(data)
    return (t.transpose(0, 1), e.transpose(0, 1)) if transposed else (t, e)


def _outcome(call, x):
    try:
        return call(x), None
    except Exception as error:  # compared by type below
        return None, type(error)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_transpose_and_t_match_torch(shape, transposed):
    t, e = _inputs(shape, transposed)
    dims = range(-len(shape), len(shape))
    for d0, d1 in itertools.product(dims, repeat=2):
        _same(e.transpose(d0, d1), t.transpose(d0, d1))
    if len(shape) == 2:
        _same(e.t(), t.t())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("method", ["view", "reshape"])
def test_view_and_reshape_match_torch(shape, transposed, method):
    t, e = _inputs(shape, transposed)
    n = int(np.prod(shape))
    for sizes in [(-1,), (n,), (1, -1), shape[::-1], (-1, 0), (-2, -3), (-1, -1), (n + 1,)]:
        want, want_error = _outcome(lambda x, s=sizes: getattr(x, method)(*s), t)
        got, got_error = _outcome(lambda x, s=sizes: getattr(x, method)(*s), e)
        assert got_error is want_error, sizes
        if want is not None:
            _same(got, want)


def test_dims_out_of_range_match_torch():
    for lib in (torch, ember):
        with pytest.raises(IndexError):
            lib.zeros(2, 3).transpose(0, 2)
        with pytest.raises(RuntimeError):
            lib.zeros(2, 3, 4).t()
