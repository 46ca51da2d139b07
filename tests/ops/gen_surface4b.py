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


GENERATORS = {
    "gradient": gradient,
}
