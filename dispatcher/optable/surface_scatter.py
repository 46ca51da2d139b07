"""scatter_reduce of PyTorch's core surface, composed of existing ops: sums and means through
index_add, extremes through a segmented sort (the last of each target's run), products through
a segmented scan over the values sorted by target (log2 of the longest run in whole-tensor
multiplies, so autograd's product rule comes from the parts)."""

from __future__ import annotations

import math

import numpy as np

import ember

from ..kinds import fused
from ..kinds._common import wrap_dim
from ..opdef import DTYPES_ALL, Kind, OpDef
from .data import OUT_INTO_COPY

# ---- scatter_reduce ---------------------------------------------------------------------------
SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_targets(x, dim, index):
    """Each index element's place in ``x.reshape(-1)``: its own coordinates, with the one along
    ``dim`` replaced by its value."""
    strides = [math.prod(x.shape[d + 1 :]) for d in range(x.ndim)]
    target = index * strides[dim] if x.ndim else index
    for d in range(index.ndim):
        if d != dim:
            shape = [1] * index.ndim
            shape[d] = index.shape[d]
            coords = ember.arange(index.shape[d], device=x.device).reshape(shape)
            target = target + coords * strides[d]
    return target.reshape(-1)


def _segment_extremes(flat_targets, values, larger: bool):
    """(targets, extreme value of each): values sorted by target (stable over a value sort),
    the last of each target's run is its max (descending first pass: its min)."""
    _, by_value = ember.sort(values.detach(), 0, descending=not larger, stable=True)
    _, by_target = ember.sort(flat_targets[by_value], 0, stable=True)
    order = by_value[by_target]
    targets, ordered = flat_targets[order], values[order]
    last = ember.ones(targets.shape, dtype=ember.bool, device=targets.device)
    if targets.numel() > 1:
        last = ember.cat([targets[1:] != targets[:-1], last[:1]], 0)
    return targets[last], ordered[last]


def segment_products(flat_targets, values):
    """(targets, product of each target's values): Hillis and Steele's inclusive scan over the
    values sorted by target, each step multiplying in the partial product ``step`` places back
    when it belongs to the same run; the last of each run then holds the run's product."""
    order = ember.sort(flat_targets, 0, stable=True)[1]
    targets, running = flat_targets[order], values[order]
    longest = int(ember.bincount(flat_targets).max()) if targets.numel() else 0
    step = 1
    while step < longest:
        same = targets[step:] == targets[:-step]
        earlier = ember.where(same, running[:-step], ember.ones_like(running[:-step]))
        running = ember.cat([running[:step], running[step:] * earlier], 0)
        step *= 2
    last = ember.ones(targets.shape, dtype=ember.bool, device=targets.device)
    if targets.numel() > 1:
        last = ember.cat([targets[1:] != targets[:-1], last[:1]], 0)
    return targets[last], running[last]


def check_scatter_reduce(x, reduce) -> None:
    if reduce not in SCATTER_REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    if x.dtype is ember.bool and reduce == "mean":
        raise NotImplementedError(
            "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'"
        )


def _scatter_reduce(x, dim, index, src, reduce, include_self=True):
    check_scatter_reduce(x, reduce)
    if x.dtype is ember.bool:  # sum and amax are or, amin is and: in integers, then back
        wide = _scatter_reduce(
            x.to(ember.int64), dim, index, src.to(ember.int64), reduce, include_self
        )
        return wide != 0
    dim = wrap_dim(dim, x.ndim, "scatter_reduce")
    if index.numel() == 0:
        return x.clone()
    narrowed = src
    for d in range(index.ndim):
        narrowed = narrowed.narrow(d, 0, index.shape[d])
    values = narrowed.reshape(-1)
    targets = _scatter_targets(x, dim, index)
    flat = x.reshape(-1)
    if reduce in ("amax", "amin", "prod"):
        if reduce == "prod":
            places, best = segment_products(targets, values)
            pick = ember.mul
        else:
            places, best = _segment_extremes(targets, values, reduce == "amax")
            pick = ember.maximum if reduce == "amax" else ember.minimum
        if include_self:
            best = pick(best, flat[places])
        return flat.scatter(0, places, best).reshape(x.shape)
    base = flat if include_self else flat.scatter(0, targets, ember.zeros_like(values))
    total = base.index_add(0, targets, values)
    if reduce == "sum":
        return total.reshape(x.shape)
    count = ember.zeros(flat.shape, dtype=x.dtype, device=x.device)
    count = count.index_add(0, targets, ember.ones_like(values))
    if include_self:
        count = count + 1
    count = ember.where(count == 0, ember.ones_like(count), count)
    if x.is_floating_point():
        return (total / count).reshape(x.shape)
    return ember.div(total, count, rounding_mode="floor").reshape(x.shape)


def _np_scatter_reduce(x, dim, index, src, reduce, include_self=True):
    out = x.copy()
    fold = {"sum": np.add, "prod": np.multiply, "amax": np.fmax, "amin": np.fmin}
    gathered: dict = {}
    for pos in np.ndindex(*index.shape):
        place = list(pos)
        place[dim] = index[pos]
        gathered.setdefault(tuple(place), []).append(src[pos])
    for place, found in gathered.items():
        items = ([x[place]] if include_self else []) + found
        if reduce == "mean":
            total = np.sum(np.array(items, x.dtype), dtype=x.dtype)
            out[place] = total / len(items) if x.dtype.kind == "f" else total // len(items)
        else:
            out[place] = fold[reduce].reduce(np.array(items, x.dtype), dtype=x.dtype)
    return out


ROWS = [
    OpDef(
        "scatter_reduce(Tensor input, int dim, Tensor index, Tensor src, str reduce, *, "
        "bool include_self=True) -> Tensor",
        Kind.INDEX,
        _np_scatter_reduce,
        dtypes=DTYPES_ALL,
        decomposition=_scatter_reduce,
        runner=fused.scatter_reduce,
        kernel_args="(out, dim, index, src, reduce): out is a copy of input (its scattered places "
        "at the reduction's identity when include_self is False) folded with src in place; "
        "reduce is sum, prod, amax or amin (mean decomposes); index int64, src of out's dtype",
        samples="scatter_reduce",
        out=OUT_INTO_COPY,
    ),
]
