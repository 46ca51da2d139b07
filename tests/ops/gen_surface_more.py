"""Sample generators for dispatcher/optable/surface_more.py: scatters into views (src of the
view's shape, in another layout) and index_copy (distinct positions, so the result is defined)."""

from __future__ import annotations

import numpy as np

import ember

from .gen_index import _index
from .sampling import Arr, Sample, arr

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def _view_shape(shape, view) -> tuple:
    return np.empty(shape, np.int8)[view].shape


def select_scatter(op, dtype, device, rng):
    for shape, layout, dim, index in (
        ((3, 4), C, 0, 1),
        ((3, 4), T, 1, -1),
        ((2, 3, 4), N, -2, 2),
        ((5,), S, 0, 4),
    ):
        at = [slice(None)] * len(shape)
        at[dim] = index
        src = arr(dtype, _view_shape(shape, tuple(at)), rng, T if len(shape) > 2 else C)
        yield Sample((arr(dtype, shape, rng, layout), src, dim, index))


def slice_scatter(op, dtype, device, rng):
    for shape, layout, dim, start, end, step in (
        ((4, 5), C, 0, None, None, 1),
        ((4, 5), T, 1, 1, 4, 2),
        ((2, 6, 3), N, -2, -4, None, 3),
        ((6,), S, 0, 2, 100, 1),
        ((3, 4), C, 1, 3, 1, 1),
    ):
        at = [slice(None)] * len(shape)
        at[dim] = slice(start, end, step)
        src = arr(dtype, _view_shape(shape, tuple(at)), rng)
        yield Sample((arr(dtype, shape, rng, layout), src, dim, start, end, step))


def diagonal_scatter(op, dtype, device, rng):
    for shape, layout, offset, dim1, dim2 in (
        ((3, 4), C, 0, 0, 1),
        ((3, 4), T, 1, 0, 1),
        ((4, 3), N, -2, 1, 0),
        ((2, 3, 4), S, 0, -1, 0),
        ((2, 3), C, 5, 0, 1),
    ):
        view = np.empty(shape, np.int8).diagonal(offset, dim1, dim2)
        src = arr(dtype, view.shape, rng)
        yield Sample((arr(dtype, shape, rng, layout), src, offset, dim1, dim2))


def index_copy(op, dtype, device, rng):
    for shape, layout, dim, count in (
        ((5, 4), C, 0, 3),
        ((5, 4), T, 1, 4),
        ((2, 3, 4), N, -1, 2),
        ((2, 3, 4), S, 1, 0),
    ):
        index = _index(rng, shape[dim], (count,), unique=True)
        src_shape = list(shape)
        src_shape[dim] = count
        yield Sample((arr(dtype, shape, rng, layout), dim, index, arr(dtype, src_shape, rng)))
    zero_d = Arr(np.array(0, np.int64))
    yield Sample((arr(dtype, (3, 2), rng), 0, zero_d, arr(dtype, (1, 2), rng)))
    yield Sample((arr(dtype, (), rng), 0, Arr(np.array([0], np.int64)), arr(dtype, (), rng)))


def _small(dtype) -> dict:
    """Integers that sum without wrapping in 8 bits (PyTorch adds them in the input's dtype)."""
    if dtype.is_floating_point or dtype is ember.bool:
        return {}
    return {"low": -3, "high": 4} if dtype.is_signed else {"low": 0, "high": 5}


def trapezoid(op, dtype, device, rng):
    """y alone, with a spacing, with sample points of y's length or y's shape, along any dim."""
    for shape, layout, dim in (((3, 4), C, -1), ((3, 4), T, 0), ((2, 3, 5), N, 1), ((4,), S, 0)):
        y = arr(dtype, shape, rng, layout, **_small(dtype))
        yield Sample((y, None, None, dim))
        yield Sample((y, None, 0.5, dim))
        # increasing points: unsigned differences would wrap (in PyTorch too)
        points = np.sort(arr(dtype, (shape[dim],), rng, **_small(dtype)).values)
        yield Sample((y, Arr(points), None, dim))
        grid = np.sort(arr(dtype, shape, rng, **_small(dtype)).values, axis=dim)
        yield Sample((y, Arr(grid), None, dim))


def isin(op, dtype, device, rng):
    """Repeats on both sides, and test elements drawn from the elements (so some are found)."""
    for shape, layout, test_shape, invert in (
        ((3, 4), C, (5,), False),
        ((3, 4), T, (2, 3), True),
        ((6,), S, (0,), False),
        ((), C, (4,), True),
    ):
        elements = arr(dtype, shape, rng, layout, **_small(dtype))
        drawn = arr(dtype, test_shape, rng, **_small(dtype)).values.copy()
        picked = np.asarray(elements.values).reshape(-1)[: min(2, drawn.size)]
        drawn.reshape(-1)[: picked.size] = picked
        tests = drawn
        yield Sample((elements, Arr(tests), False, invert))


def bucketize(op, dtype, device, rng):
    for shape, layout, count, out_int32, right in (
        ((3, 4), C, 5, False, False),
        ((3, 4), T, 3, True, True),
        ((7,), S, 0, False, True),
        ((), C, 4, False, False),
    ):
        boundaries = np.sort(arr(dtype, (count,), rng).values)
        x = arr(dtype, shape, rng, layout)
        sample_dtype = ember.int32 if out_int32 else None
        yield Sample((x, Arr(boundaries), out_int32, right), dtype=sample_dtype)


def renorm(op, dtype, device, rng):
    """Slices above and below maxnorm, each p, and a maxnorm of 0 (every slice zeroed)."""
    for shape, layout, p, dim, maxnorm in (
        ((3, 4), C, 2, 0, 1.0),
        ((3, 4), T, 1, 1, 2.5),
        ((2, 3, 4), N, float("inf"), -1, 0.8),
        ((4, 5), S, 0.5, 0, 6.0),
        ((2, 3), C, 3, 1, 0.0),
    ):
        yield Sample((arr(dtype, shape, rng, layout), p, dim, maxnorm))


def masked_scatter(op, dtype, device, rng):
    """Masks of input's shape, broadcast up to it, or broadcasting input up (the functional
    form expands both); sources with more elements than set positions, and none at all."""
    for shape, layout, mask_shape, source_shape in (
        ((3, 4), C, (3, 4), (3, 4)),
        ((3, 4), T, (4,), (13,)),
        ((4,), S, (2, 4), (2, 5)),
        ((), C, (), (1,)),
    ):
        mask = Arr(rng.random(mask_shape) < 0.5)
        source = arr(dtype, source_shape, rng, T if len(source_shape) == 2 else C)
        yield Sample((arr(dtype, shape, rng, layout), mask, source))
    none_set = Arr(np.zeros((2, 3), bool))
    yield Sample((arr(dtype, (2, 3), rng, N), none_set, arr(dtype, (0,), rng)))


def combinations(op, dtype, device, rng):
    for length, layout, r, with_replacement in (
        (4, C, 2, False),
        (4, S, 3, True),
        (3, N, 1, False),
        (2, C, 3, False),
        (3, C, 0, True),
        (0, C, 2, False),
    ):
        yield Sample((arr(dtype, (length,), rng, layout), r, with_replacement))


def tri_indices(op, dtype, device, rng):
    """Square, wide and tall shapes, offsets inside and past the matrix, and no rows."""
    for row, col, offset in ((3, 3, 0), (3, 5, 1), (5, 2, -2), (4, 4, 9), (0, 3, 0), (2, 3, -5)):
        yield Sample((row, col, offset, dtype, None, device), dtype=dtype)  # layout: None


GENERATORS = {
    "select_scatter": select_scatter,
    "slice_scatter": slice_scatter,
    "diagonal_scatter": diagonal_scatter,
    "index_copy": index_copy,
    "trapezoid": trapezoid,
    "isin": isin,
    "bucketize": bucketize,
    "renorm": renorm,
    "masked_scatter": masked_scatter,
    "combinations": combinations,
    "tri_indices": tri_indices,
}
