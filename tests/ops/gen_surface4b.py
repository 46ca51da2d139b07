"""Sample generators for the rows of PyTorch's core surface, batch B (issue 13):
dispatcher/optable/surface_gradient.py and its siblings."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample, arr

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def _points(count: int, dtype, rng) -> Arr:
    """Increasing, unevenly spaced sample points (distinct: the spacing divides), in the
    input's float dtype (the default float for integers), so the result keeps it."""
    points = np.cumsum(rng.uniform(0.5, 1.5, count))
    return Arr(points.astype(dtype.np if dtype.is_floating_point else np.float32))


def gradient(op, dtype, device, rng):
    """Every dim or some, a uniform spacing (one number or one per dim), coordinate tensors,
    both edge orders, and the smallest sizes each edge order takes."""
    for shape, layout, spacing, dim, edge_order in (
        ((5,), C, None, None, 1),
        ((4, 6), T, 2.0, None, 2),
        ((3, 4), N, [0.5, 2.0], None, 1),
        ((2, 3, 4), S, [1.5], [-1], 2),
        ((2, 5), C, None, 0, 1),
    ):
        yield Sample((arr(dtype, shape, rng, layout), spacing, dim, edge_order))
    for shape, dim, edge_order in (((4, 5), [0, 1], 1), ((3, 6), [1], 2), ((3, 3, 3), [0, -1], 2)):
        coords = [_points(shape[d], dtype, rng) for d in dim]
        yield Sample((arr(dtype, shape, rng), coords, dim, edge_order), desc="coordinates")


def index_reduce(op, dtype, device, rng):
    """Each reduction, with and without the input's values, repeated and missing indices,
    along any dim, a 0-d input; values away from zero (prod stays in range)."""
    small = {"low": 1, "high": 3} if not dtype.is_floating_point else {}
    cases = (((5, 3), C, 0, [0, 4, 0, 2]), ((3, 4), T, 1, [3, 3, 3]), ((2, 3, 4), N, -2, [2]))
    for reduce in ("prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            for shape, layout, dim, index in cases:
                source_shape = list(shape)
                source_shape[dim] = len(index)
                x = arr(dtype, shape, rng, layout, **small)
                source = arr(dtype, source_shape, rng, **small)
                positions = Arr(np.array(index, np.int64))
                yield Sample((x, dim, positions, source, reduce, include_self))
        scalar, one = arr(dtype, (), rng, **small), Arr(np.array([0], np.int64))
        yield Sample((scalar, 0, one, arr(dtype, (), rng, **small), reduce, True), desc="0-d")


GENERATORS = {
    "index_reduce": index_reduce,
    "gradient": gradient,
}
