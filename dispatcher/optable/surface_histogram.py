"""histogram and histogramdd of PyTorch's core surface, composed of existing ops: each point's
bin along every dim by searchsorted on that dim's edges (PyTorch's kernel does a binary search
too: the last edge closes the last bin), the bins' weights summed by index_add, the density
divided by the total and the bins' widths (aten/native/Histogram.cpp)."""

from __future__ import annotations

import math
import numbers
from collections import namedtuple

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds._common import Tensor
from ..opdef import DTYPES_FLOAT, OUT_EXACT, Kind, OpDef

histogram_result = namedtuple("histogram", "hist bin_edges")
histogramdd_result = namedtuple("histogramdd", "hist bin_edges")
histogram_result.__module__ = histogramdd_result.__module__ = "ember.return_types"

_C_NAMES = {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half"}
_C_NAMES[dt.bfloat16] = "c10::BFloat16"


def _check_tensor_bins(x, edges: list) -> None:
    for d, e in enumerate(edges):
        if e.ndim != 1:
            raise RuntimeError(
                "torch.histogramdd: bins tensor should have one dimension, but got "
                f"{e.ndim} dimensions in the bins tensor for dimension {d}"
            )
        if e.dtype is not x.dtype:
            raise RuntimeError(
                "torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                f"but got input with dtype {_C_NAMES.get(x.dtype, x.dtype.name)} and bins for "
                f"dimension {d} with dtype {_C_NAMES.get(e.dtype, e.dtype.name)}"
            )


def _check_weight(x, weight) -> None:
    if weight is None:
        return
    if tuple(weight.shape) != tuple(x.shape[:-1]):
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as "
            "the input tensor excluding its innermost dimension, but got input with shape "
            f"{list(x.shape)} and weight with shape {list(weight.shape)}"
        )
    if weight.dtype is not x.dtype:
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
            f"should have the same dtype, but got input({_C_NAMES.get(x.dtype)}), and "
            f"weight({_C_NAMES.get(weight.dtype, weight.dtype.name)})"
        )


def _outer_edges(points, dims: int, range_) -> list:
    """(leftmost, rightmost) per dim: the range, else the points' extremes ([0, 1] for none),
    widened by a half on each side where they meet (numpy's rule)."""
    if range_ is not None:
        if len(range_) != 2 * dims:
            raise RuntimeError(
                f"torch.histogramdd: for a {dims}-dimensional histogram range should have "
                f"{2 * dims} elements, but got {len(range_)}"
            )
        outer = [(float(range_[2 * d]), float(range_[2 * d + 1])) for d in range(dims)]
    elif points.numel():
        lows, highs = points.amin(0).tolist(), points.amax(0).tolist()
        outer = list(zip(lows, highs))
    else:
        outer = [(0.0, 1.0)] * dims
    found = []
    for d, (low, high) in enumerate(outer):
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(
                f"torch.histogramdd: dimension {d}'s range [{_num(low)}, {_num(high)}] is not "
                "finite"
            )
        if low > high:
            raise RuntimeError(
                f"torch.histogramdd: min should not exceed max, but got min {_num(low)} max "
                f"{_num(high)} for dimension {d}"
            )
        found.append((low - 0.5, high + 0.5) if low == high else (low, high))
    return found


def _num(value: float) -> str:
    """A double as C++ streams it (``2``, not ``2.0``)."""
    return f"{value:g}"


def _counts(points, edges: list, weight, density: bool):
    """The histogram of points (N, D) over each dim's edges, with optional weights (N,)."""
    bins = [e.shape[0] - 1 for e in edges]
    hist = ember.zeros(math.prod(bins), dtype=points.dtype, device=points.device)
    if points.shape[0] and hist.numel():
        inside = ember.ones(points.shape[0], dtype=ember.bool, device=points.device)
        place = ember.zeros(points.shape[0], dtype=ember.int64, device=points.device)
        for d, e in enumerate(edges):
            values = points.select(1, d).contiguous()
            bin_ = ember.clamp(ember.searchsorted(e, values, right=True) - 1, 0, bins[d] - 1)
            inside = inside & (values >= e[0]) & (values <= e[-1])
            place = place * bins[d] + bin_
        added = ember.ones_like(inside, dtype=points.dtype) if weight is None else weight
        added = ember.where(inside, added, ember.zeros_like(added))
        hist = hist.index_add(0, place, added)
    hist = hist.reshape(bins)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * len(bins)
            shape[d] = bins[d]
            hist = hist / e.diff().reshape(shape)
    return hist


def _edges_of(x, points, bins, range_) -> list:
    """Each dim's edges: the given tensors, or ``bins`` even steps over the range."""
    dims = points.shape[1]
    if isinstance(bins, Tensor) or (bins and isinstance(bins[0], Tensor)):
        edges = [bins] if isinstance(bins, Tensor) else list(bins)
        _check_tensor_bins(x, edges)
        return [e.detach().clone() for e in edges]  # PyTorch's bin_edges: a copy
    counts = [int(b) for b in bins]
    for d, count in enumerate(counts):
        if count <= 0:
            raise RuntimeError(
                f"torch.histogram(): bins must be > 0, but got {count} for dimension {d}"
            )
    outer = _outer_edges(points, dims, range_)
    return [
        ember.linspace(low, high, count + 1, dtype=x.dtype, device=x.device)
        for (low, high), count in zip(outer, counts)
    ]


def _detached(x, weight):
    """No gradient flows through a histogram (PyTorch's has no formula)."""
    return x.detach(), None if weight is None else weight.detach()


def bin_counts(x, bins, name: str) -> list:
    """The number of bins along each dim (what the outputs' shapes follow)."""
    if isinstance(bins, Tensor):
        return [bins.shape[0] - 1]
    if isinstance(bins, numbers.Integral):
        return [int(bins)] * (x.shape[-1] if name == "histogramdd" else 1)
    return [b.shape[0] - 1 if isinstance(b, Tensor) else int(b) for b in bins]


def _histogram(x, bins, range=None, weight=None, density=False):
    x, weight = _detached(x, weight)
    points = x.reshape(-1, 1)
    if weight is not None and tuple(weight.shape) != tuple(x.shape):
        _check_weight(points, weight)
    flat_weight = None if weight is None else weight.reshape(-1)
    _check_weight(points, flat_weight)
    chosen = bins if isinstance(bins, Tensor) else [bins]
    edges = _edges_of(x, points, chosen, range)
    return histogram_result(_counts(points, edges, flat_weight, density), edges[0])


def _histogramdd(x, bins, range=None, weight=None, density=False):
    if x.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    x, weight = _detached(x, weight)
    _check_weight(x, weight)
    dims = x.shape[-1]
    if isinstance(bins, numbers.Integral):
        bins = [bins] * dims
    if len(bins) != dims:
        raise RuntimeError(
            "histogramdd: The size of bins must be equal to the innermost dimension of the input."
        )
    points = x.reshape(-1, dims)
    edges = _edges_of(x, points, list(bins), range)
    flat_weight = None if weight is None else weight.reshape(-1)
    return [_counts(points, edges, flat_weight, density), *edges]  # the frontend pairs them


def _np_histogramdd(x, bins, range=None, weight=None, density=False):
    points = np.asarray(x).reshape(-1, x.shape[-1])
    dims = points.shape[1]
    bins = [bins] * dims if isinstance(bins, numbers.Integral) else list(bins)
    pairs = None if range is None else [(range[2 * d], range[2 * d + 1]) for d in np.arange(dims)]
    w = None if weight is None else np.asarray(weight).reshape(-1)
    hist, edges = np.histogramdd(points, bins, range=pairs, weights=w, density=density)
    return (hist, *edges)


def _np_histogram(x, bins, range=None, weight=None, density=False):
    hist, edges = _np_histogramdd(np.reshape(x, (-1, 1)), [bins], range, weight, density)
    return hist, edges


ROWS = [
    OpDef(
        "histogram(Tensor input, Scalar bins, *, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> (Tensor hist, Tensor bin_edges)",
        Kind.INDEX,
        _np_histogram,
        dtypes=DTYPES_FLOAT - {dt.float16, dt.bfloat16},
        differentiable=False,
        decomposition=_histogram,
        samples="histogram",
        out=OUT_EXACT,
        notes="bins: a count of even bins over range (else the input's extremes) or the edges",
    ),
    OpDef(
        "histogramdd(Tensor input, Scalar[] bins, *, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> Tensor[]",
        Kind.INDEX,
        _np_histogramdd,
        dtypes=DTYPES_FLOAT - {dt.float16, dt.bfloat16},
        differentiable=False,
        decomposition=_histogramdd,
        method=False,
        frontend=True,
        samples="histogramdd",
        out=None,
        notes="input (..., D): points of D dims; bins per dim: counts or edge tensors; the "
        "op gives [hist, *edges], ember.histogramdd (ember/_surface.py) (hist, edges)",
    ),
]
