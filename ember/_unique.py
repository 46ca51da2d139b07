"""unique_consecutive, and unique along a dim: runs of equal elements (or equal slices along
``dim``) found by comparing neighbours, after a lexicographic stable sort of the slices for
``unique``. Flat ``unique`` stays in ``_frontends``; these are its per-slice forms."""

from __future__ import annotations

import math

from . import _dtype as dt
from . import _frontends
from .dispatcher.kinds._common import wrap_dim
from .dispatcher.optable import OPS


def _rows(input, dim):
    """``input`` as (slices, elements per slice), the slices along ``dim`` first."""
    if dim is None:
        return input.reshape(-1), None
    d = wrap_dim(dim, input.ndim, "unique")
    moved = OPS["movedim"](input, [d], [0])
    return moved, d


def _run_starts(rows):
    """A bool per slice: True where a slice differs from the one before (always the first)."""
    n = rows.shape[0]
    if n == 0:
        return OPS["full"]((0,), True, dt.bool_, rows.device)
    differ = rows[1:] != rows[:-1]
    if differ.ndim > 1:
        differ = differ.reshape(n - 1, math.prod(differ.shape[1:])).any(1)
    head = OPS["full"]((1,), True, dt.bool_, rows.device)
    return OPS["cat"]([head, differ], 0)


def _results(values, keep, d, return_inverse, return_counts, inverse_shape, order=None):
    extras = []
    if return_inverse:
        group = OPS["cumsum"](keep.to(dt.int64), 0, None) - 1
        if order is not None and group.numel():  # back from sorted places to input places
            group = OPS["scatter"](group.clone(), 0, order, group)
        extras.append(group.reshape(inverse_shape))
    if return_counts:
        starts = OPS["nonzero"](keep).reshape(-1)
        end = OPS["full"]((1,), keep.shape[0], dt.int64, keep.device)
        extras.append(OPS["cat"]([starts[1:], end], 0) - starts)
    kept = values[keep]
    if d is not None:
        kept = OPS["movedim"](kept, [0], [d])
    return (kept, *extras) if extras else kept


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Eliminates all but the first element of every run of equal consecutive elements (or
    slices along ``dim``), as ``torch.unique_consecutive``."""
    rows, d = _rows(input, dim)
    inverse_shape = tuple(input.shape) if d is None else (rows.shape[0],)
    keep = _run_starts(rows)
    return _results(rows, keep, d, return_inverse, return_counts, inverse_shape)


def _lexicographic_order(rows):
    """Indices that sort the slices of ``rows`` lexicographically: one stable sort per element
    position, last to first (slices are short where unique(dim=) is used)."""
    flat = rows.reshape(rows.shape[0], math.prod(rows.shape[1:]))
    order = OPS["arange"](0, rows.shape[0], 1, dt.int64, rows.device)
    for column in range(flat.shape[1] - 1, -1, -1):
        key = OPS["index_select"](flat[:, column], 0, order)
        step = OPS["sort"](key, 0, False, True)[1]
        order = OPS["index_select"](order, 0, step)
    return order


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Unique elements, or unique slices along ``dim`` (always sorted, as PyTorch's)."""
    if dim is None:
        return _frontends.unique(input, sorted, return_inverse, return_counts)
    rows, d = _rows(input, dim)
    order = _lexicographic_order(rows)
    ordered = OPS["index_select"](rows, 0, order)
    keep = _run_starts(ordered)
    return _results(ordered, keep, d, return_inverse, return_counts, (rows.shape[0],), order)


FUNCTIONS = {"unique": unique, "unique_consecutive": unique_consecutive}
METHODS = dict(FUNCTIONS)
