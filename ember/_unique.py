"""unique_consecutive, and unique along a dim: runs of equal elements (or equal slices along
``dim``) found by comparing neighbours, after a lexicographic stable sort of the slices for
``unique``. Flat ``unique`` stays in ``_frontends``; these are its per-slice forms."""

from __future__ import annotations

import math

from . import _dtype as dt
from . import _factories, _frontends
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


def _dense_ranks(columns):
    """For each column of ``columns`` (n, k), every element's rank among the distinct values of
    its column (0 the smallest): one sort of all columns at once."""
    n = columns.shape[0]
    values, places = OPS["sort"](columns, 0, False, False)
    differ = (values[1:] != values[:-1]).to(dt.int64)
    head = OPS["full"]((1, columns.shape[1]), 0, dt.int64, columns.device)
    ranked = OPS["cumsum"](OPS["cat"]([head, differ], 0), 0, None)
    ranks = OPS["full"]((n, columns.shape[1]), 0, dt.int64, columns.device)
    return OPS["scatter"](ranks, 0, places, ranked)


def _lexicographic_order(rows):
    """Indices that sort the slices of ``rows`` lexicographically.

    Each column's values become dense ranks below n (one batched sort), then runs of columns
    are packed into one int64 key per run, base 2**bits with bits enough for a rank, and the
    keys are ranked again, until one key per slice is left: about log(k) / log(63 / bits)
    batched sorts for slices of k elements, where sorting column by column took k (a 5x5x5
    unique along dim 0 took 25 sorts, now 2 and the final one)."""
    n = rows.shape[0]
    flat = rows.reshape(n, math.prod(rows.shape[1:]))
    if n < 2 or flat.shape[1] == 0:
        return OPS["arange"](0, n, 1, dt.int64, rows.device)
    bits = (n - 1).bit_length()
    per_key = 63 // bits
    keys = _dense_ranks(flat) if flat.shape[1] > 1 else flat
    while keys.shape[1] > 1:
        width = keys.shape[1]
        run = min(per_key, width)
        runs = -(-width // run)
        if runs * run > width:  # pad the last run with zero ranks
            pad = OPS["full"]((n, runs * run - width), 0, dt.int64, rows.device)
            keys = OPS["cat"]([keys, pad], 1)
        scale = [1 << (bits * (run - 1 - j)) for j in range(run)]
        weights = _factories.tensor(scale, dtype=dt.int64, device=rows.device)
        packed = (keys.reshape(n, runs, run) * weights).sum(2)
        keys = _dense_ranks(packed) if runs > 1 else packed
    return OPS["sort"](keys.reshape(n), 0, False, True)[1]


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
