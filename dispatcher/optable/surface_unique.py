"""unique without a dim (``_unique2``, the op under ``ember.unique``): the sorted distinct values,
each element's place among them and each value's count. The decomposition sorts and compares
neighbours in ember ops; a backend may give one kernel (the CPU's: one sort of the keys, then
one pass over the runs)."""

from __future__ import annotations

import numpy as np

import ember

from ..kinds import fused
from ..opdef import DTYPES_ALL, Kind, OpDef, Promotion


def _unique2(x, sorted=True, return_inverse=False, return_counts=False):
    """The flat input's stable sort; a run starts where a value differs from the one before
    (NaN differs from everything, itself included)."""
    flat = x.reshape(-1)
    values, order = ember.sort(flat, 0, stable=True)
    nothing = ember.empty(0, dtype=ember.int64, device=x.device)
    if flat.numel() == 0:
        keep = values.to(ember.bool)
    else:
        head = ember.ones(1, dtype=ember.bool, device=x.device)
        keep = ember.cat([head, values[1:] != values[:-1]], 0)
    inverse = counts = nothing
    if return_inverse:
        group = ember.cumsum(keep.to(ember.int64), 0) - 1
        inverse = ember.empty(flat.shape, dtype=ember.int64, device=x.device)
        if flat.numel():
            inverse = inverse.scatter(0, order, group)
        inverse = inverse.reshape(x.shape)
    if return_counts:
        starts = ember.nonzero(keep).reshape(-1)
        end = ember.full((1,), flat.numel(), dtype=ember.int64, device=x.device)
        counts = ember.cat([starts[1:], end], 0) - starts
    return values[keep], inverse, counts


def _np_unique2(x, sorted=True, return_inverse=False, return_counts=False):
    flat = np.asarray(x).reshape(-1)
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    keep = np.ones(flat.size, bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    group = np.cumsum(keep) - 1
    inverse = np.empty(flat.size, np.int64)
    inverse[order] = group
    starts = np.flatnonzero(keep)
    counts = np.diff(np.r_[starts, flat.size]).astype(np.int64)
    nothing = np.zeros(0, np.int64)
    return (
        ordered[keep],
        inverse.reshape(np.shape(x)) if return_inverse else nothing,
        counts if return_counts else nothing,
    )


ROWS = [
    OpDef(
        "_unique2(Tensor input, bool sorted=True, bool return_inverse=False, "
        "bool return_counts=False) "
        "-> (Tensor values, Tensor inverse_indices, Tensor counts)",
        Kind.SORT,
        _np_unique2,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_ALL,
        differentiable=False,
        decomposition=_unique2,
        runner=fused.unique,
        kernel_args="(values, inverse, counts, x) -> count: x 1-D; values and counts (int64) of "
        "x's length, inverse (int64) of x's length or None (likewise counts); the kernel "
        "writes the first count entries",
        method=False,
        out=None,
        samples="unique",
        notes="always sorted (as PyTorch's CPU unique); inverse and counts are empty unless asked",
    ),
]
