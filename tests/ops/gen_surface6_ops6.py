"""Sample generators for the masked index entry points (issue 13, batch ops6):
dispatcher/optable/surface6_ops6.py."""

from __future__ import annotations

import math

import numpy as np

from ember.dispatcher.optable.nn import _np_max_pool2d
from ember.dispatcher.optable.upsample import UPSAMPLES

from .sampling import Arr, Sample, arr

C, T = "contiguous", "transposed"

# (input shape, index grid shape, a dim left unindexed (None in the list) or -1 for none)
CASES = (((5, 5), (6, 4), -1), ((4, 6, 3), (3, 5), 1), ((5,), (7,), -1))


def _indices(shape, grid, skip, rng):
    """Broadcasting int64 index columns reaching past both ends (the clamp's case), with None
    for the unindexed dim; an indexed dim's column is shaped to broadcast over the grid."""
    indexed = [d for d in range(len(shape)) if d != skip]
    out = []
    for position, dim in enumerate(indexed):
        column = [1] * len(grid)
        column[position % len(grid)] = grid[position % len(grid)]
        out.append(Arr(rng.integers(-2, shape[dim] + 2, column).astype(np.int64)))
    return [out.pop(0) if d != skip else None for d in range(len(shape))]


def unsafe_masked_index(op, dtype, device, rng):
    for (shape, grid, skip), fill in zip(CASES, (-1.5, 2, True), strict=True):
        indices = _indices(shape, grid, skip, rng)
        rest = tuple(shape[skip : skip + 1]) if skip >= 0 else ()
        mask = Arr(rng.uniform(0, 1, grid + rest) < 0.7)
        yield Sample((arr(dtype, shape, rng, T if len(shape) == 2 else C), mask, indices, fill))


def unsafe_masked_index_put_accumulate(op, dtype, device, rng):
    for shape, grid, skip in CASES:
        indices = _indices(shape, grid, skip, rng)
        rest = tuple(shape[skip : skip + 1]) if skip >= 0 else ()
        mask = Arr(rng.uniform(0, 1, grid + rest) < 0.7)
        values = arr(dtype, grid + rest, rng)
        yield Sample((arr(dtype, shape, rng, T if len(shape) == 2 else C), mask, indices, values))


def max_pool2d_with_indices_backward(op, dtype, device, rng):
    """A forward's input and its argmax indices (from the table's max_pool2d reference, on
    distinct values), a gradient shaped like its output; 3-D and 4-D, overlapping windows
    (indices repeat: their gradients add up), padding, dilation, ceil mode."""
    cases = (
        ((2, 3, 5, 6), (3, 3), (1, 1), (1, 1), (1, 1), False),
        ((2, 5, 7), (2, 3), (2, 1), (1, 1), (2, 1), True),
        ((1, 1, 4, 4), (2, 2), (2, 2), (0, 0), (1, 1), False),
    )
    for shape, kernel, stride, padding, dilation, ceil_mode in cases:
        values = (rng.permutation(math.prod(shape)).reshape(shape) - 50).astype(np.float64)
        pooled, indices = _np_max_pool2d(values, kernel, stride, padding, dilation, ceil_mode)
        x = Arr(values.astype(dtype.np))
        grad = arr(dtype, pooled.shape, rng)
        yield Sample((grad, x, kernel, stride, padding, dilation, ceil_mode, Arr(indices)))


def segment_reduce(op, dtype, device, rng):
    """Every reduction, with and without initial=, by lengths= and by offsets=, along a
    leading and an inner axis (per-row segments), empty segments included."""
    cases = (
        ((5,), 0, [[0, 2, 3]]),
        ((2, 6, 3), 1, [[2, 0, 4], [6, 0, 0]]),
        ((4, 2), 0, [[1, 3, 0]]),
    )
    reductions = ("sum", "prod", "mean", "max", "min", "amax")
    for i, reduce in enumerate(reductions):
        shape, axis, lengths = cases[i % len(cases)]
        counts = np.array(lengths, np.int64).reshape(shape[:axis] + (-1,))
        initial = (None, 2, -1.5)[i % 3]
        data = arr(dtype, shape, rng)
        if i % 2:  # offsets=: the same segments as cumulative bounds
            bounds = np.concatenate(
                [np.zeros(counts.shape[:-1] + (1,), np.int64), np.cumsum(counts, -1)], -1
            )
            yield Sample((data, reduce, None, None, Arr(bounds), axis, False, initial))
        else:
            yield Sample((data, reduce, Arr(counts), None, None, axis, False, initial))


def batch_norm_with_update(op, dtype, device, rng):
    """Batches of 2-D to 4-D inputs, with and without the affine parameters."""
    for shape, layout, affine in (
        ((4, 3), C, True),
        ((3, 2, 5), T, False),
        ((2, 3, 2, 2), C, True),
    ):
        c = shape[1]
        mean, var = arr(dtype, (c,), rng), Arr(rng.uniform(0.5, 2.0, c).astype(dtype.np))
        w = arr(dtype, (c,), rng) if affine else None
        b = arr(dtype, (c,), rng) if affine else None
        yield Sample((arr(dtype, shape, rng, layout), w, b, mean, var, 0.1, 1e-5))


def upsample_bilinear2d_aa(op, dtype, device, rng):
    """Down- and upscaling to sizes, with scales and align_corners, and the .vec form."""
    x = arr(dtype, (2, 3, 10, 12), rng)
    yield Sample((x, [3, 5], False))
    yield Sample((x, [4, 20], False, 1.7, 0.9))
    yield Sample((x, [3, 3], True, 1.7, 0.9))
    yield Sample((arr(dtype, (1, 2, 6, 5), rng, T), None, False, None, None, [1.7, 0.5]))


def upsample(op, dtype, device, rng):
    """The upsample rows (.vec overloads): sizes up and down, scale factors (the kernel's
    coordinates use them, not in / out) and align_corners where the row has it."""
    spatial = int(op.name[-2])
    corners = UPSAMPLES[op.name][1]
    # small enough for the autograd tests' gradcheck (at most 96 elements in and out)
    x = arr(dtype, (1, 2) + (3, 4, 2)[:spatial], rng)
    sizes = [4, 3, 3][:spatial]
    factors = [1.7, 0.6, 2.0][:spatial]
    for flag in (False, True) if corners else (None,):
        mid = () if flag is None else (flag,)
        yield Sample((x, sizes, *mid, None))
        yield Sample((x, None, *mid, factors))


GENERATORS = {
    "unsafe_masked_index": unsafe_masked_index,
    "unsafe_masked_index_put_accumulate": unsafe_masked_index_put_accumulate,
    "max_pool2d_with_indices_backward": max_pool2d_with_indices_backward,
    "segment_reduce": segment_reduce,
    "batch_norm_with_update": batch_norm_with_update,
    "upsample_bilinear2d_aa": upsample_bilinear2d_aa,
    "upsample": upsample,
}
