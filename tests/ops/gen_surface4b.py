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
    along any dim, a 0-d input; values away from zero (prod stays in range). include_self
    alternates over the cases, so each reduction meets both without doubling the samples
    (their gradient checks on the slow test devices took a minute of CI)."""
    small = {"low": 1, "high": 3} if not dtype.is_floating_point else {}
    cases = (((5, 3), C, 0, [0, 4, 0, 2]), ((3, 4), T, 1, [3, 3, 3]), ((2, 3, 4), N, -2, [2]))
    for turn, reduce in enumerate(("prod", "mean", "amax", "amin")):
        for case, (shape, layout, dim, index) in enumerate(cases):
            include_self = (case + turn) % 2 == 0
            source_shape = list(shape)
            source_shape[dim] = len(index)
            x = arr(dtype, shape, rng, layout, **small)
            source = arr(dtype, source_shape, rng, **small)
            positions = Arr(np.array(index, np.int64))
            yield Sample((x, dim, positions, source, reduce, include_self))
        scalar, one = arr(dtype, (), rng, **small), Arr(np.array([0], np.int64))
        yield Sample((scalar, 0, one, arr(dtype, (), rng, **small), reduce, True), desc="0-d")


def _edges(count: int, dtype, rng) -> Arr:
    return Arr(np.sort(rng.uniform(-3, 3, count + 1)).astype(dtype.np))


def histogram(op, dtype, device, rng):
    """Bin counts over the extremes or a range, edge tensors, weights, densities, a 0-d and
    an empty input."""
    for shape, layout, bins, range_, weighted, density in (
        ((5, 4), C, 3, None, False, False),
        ((4, 6), T, 4, [-1.0, 2.0], True, False),
        ((7,), S, 2, None, True, True),
        ((), C, 1, None, False, True),
        ((3, 0), C, 2, None, False, False),
    ):
        x = arr(dtype, shape, rng, layout)
        weight = arr(dtype, shape, rng, low=0.0, high=2.0) if weighted else None
        yield Sample((x, bins, range_, weight, density))
        yield Sample((x, _edges(bins, dtype, rng), None, weight, density), desc="edges")


def histogramdd(op, dtype, device, rng):
    """Points of 1 to 3 dims: counts per dim or one for all, a range, edge tensors, weights."""
    for shape, bins, range_, weighted, density in (
        ((6, 2), [2, 3], None, False, False),
        ((2, 5, 3), 2, [-1.0, 1.0, -2.0, 2.0, 0.0, 3.0], True, False),
        ((4, 1), [3], None, True, True),
        ((0, 2), [1, 2], None, False, False),
    ):
        x = arr(dtype, shape, rng)
        weight = arr(dtype, shape[:-1], rng, low=0.0, high=2.0) if weighted else None
        yield Sample((x, bins, range_, weight, density))
        edges = [_edges(b, dtype, rng) for b in ([bins] * shape[-1] if type(bins) is int else bins)]
        yield Sample((x, edges, None, weight, density), desc="edges")


def _params(dtype, count: int, rng, present: bool):
    return arr(dtype, (count,), rng) if present else None


def native_layer_norm(op, dtype, device, rng):
    for shape, layout, normalized, affine in (
        ((3, 4), C, [4], True),
        ((2, 3, 5), T, [3, 5], False),
        ((4, 6), N, [4, 6], True),
    ):
        x = arr(dtype, shape, rng, layout)
        weight = arr(dtype, normalized, rng) if affine else None
        bias = arr(dtype, normalized, rng) if affine else None
        yield Sample((x, normalized, weight, bias, 1e-5))


def native_layer_norm_backward(op, dtype, device, rng):
    """The forward's statistics computed here in float64 (so the reference and the op read the
    same mean and rstd), every output_mask, with and without weight and bias."""
    for shape, layout, normalized, affine, mask in (
        ((3, 4), C, [4], True, [True, True, True]),
        ((2, 3, 5), T, [3, 5], False, [True, False, False]),
        ((4, 6), N, [4, 6], True, [False, True, True]),
        ((2, 70, 3), C, [3], True, [True, False, True]),
    ):
        x = arr(dtype, shape, rng, layout)
        axes = tuple(range(len(shape) - len(normalized), len(shape)))
        values = x.values.astype(np.float64)
        mean = values.mean(axes, keepdims=True)
        rstd = 1 / np.sqrt(values.var(axes, keepdims=True) + 1e-5)
        stats = [Arr(s.astype(dtype.np)) for s in (mean, rstd)]
        weight, bias = (arr(dtype, normalized, rng) if affine else None for _ in range(2))
        grad = arr(dtype, shape, rng)
        yield Sample((grad, x, normalized, *stats, weight, bias, mask))


def native_group_norm(op, dtype, device, rng):
    for shape, layout, group, affine in (((2, 4, 3), C, 2, True), ((3, 6, 2, 2), T, 3, False)):
        x = arr(dtype, shape, rng, layout)
        n, c = shape[:2]
        hxw = int(np.prod(shape[2:]))
        w, b = _params(dtype, c, rng, affine), _params(dtype, c, rng, affine)
        yield Sample((x, w, b, n, c, hxw, group, 1e-5))


def native_batch_norm(op, dtype, device, rng):
    """Training (the running statistics, when given, updated) and evaluation."""
    for shape, layout, training, affine, running in (
        ((4, 3), C, True, True, True),
        ((3, 2, 5), T, True, False, False),
        ((2, 3, 2, 2), C, False, True, True),
    ):
        c = shape[1]
        mean = arr(dtype, (c,), rng) if running else None
        var = Arr(rng.uniform(0.5, 2.0, c).astype(dtype.np)) if running else None
        x = arr(dtype, shape, rng, layout)
        w, b = _params(dtype, c, rng, affine), _params(dtype, c, rng, affine)
        yield Sample((x, w, b, mean, var, training, 0.1, 1e-5))


def ormqr(op, dtype, device, rng):
    """geqrf's reflectors of tall, wide and batched inputs times matrices from either side,
    Q or its transpose."""
    for (m, n), batch, cols in (((5, 3), (), 2), ((3, 4), (), 3), ((4, 4), (2,), 1)):
        a = rng.uniform(-1, 1, (*batch, m, n))
        tau = rng.uniform(0.5, 1.5, (*batch, min(m, n)))
        for left, transpose in ((True, False), (True, True), (False, False), (False, True)):
            c_shape = (*batch, m, cols) if left else (*batch, cols, m)
            c = rng.uniform(-1, 1, c_shape)
            yield Sample(tuple(Arr(v.astype(dtype.np)) for v in (a, tau, c)) + (left, transpose))


GENERATORS = {
    "ormqr": ormqr,
    "native_layer_norm": native_layer_norm,
    "native_layer_norm_backward": native_layer_norm_backward,
    "native_group_norm": native_group_norm,
    "native_batch_norm": native_batch_norm,
    "histogram": histogram,
    "histogramdd": histogramdd,
    "index_reduce": index_reduce,
    "gradient": gradient,
}
