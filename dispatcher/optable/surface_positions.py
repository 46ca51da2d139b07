"""Positions and constant fills of PyTorch's core surface: nonzero_static (nonzero padded or
cut to a static size), unravel_index (flat indices to coordinates) and the out-of-place fill.
Composites over ember ops, with PyTorch's checks and messages."""

from __future__ import annotations

import numbers

import numpy as np

import ember

from ..opdef import DTYPES_INT, Kind, OpDef, Out, Promotion
from .fill import fill_value


# ---- fill ------------------------------------------------------------------------------------
def _fill(x, value):
    # where, not a filled clone: a 0-d tensor value receives its gradient (the sum), as in
    # PyTorch, and x's is zero
    keep = ember.ones((), dtype=ember.bool, device=x.device)
    return ember.where(keep, fill_value("fill", x, value), x)


def _np_fill(x, value):
    return np.full(np.shape(x), value, dtype=np.asarray(x).dtype)


# ---- nonzero_static --------------------------------------------------------------------------
def _nonzero_static(x, size, fill_value=-1):
    """Static shapes throughout (no nonzero, whose shape reads values), so that meta tensors
    and vmap run it: each hit goes to its rank's row, every other element to a spare row."""
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    hit = (x != 0).reshape(-1)
    rank = hit.to(ember.int64).cumsum(0) - 1
    row = ember.where(hit, ember.clamp(rank, max=size), size)
    places = ember.arange(hit.shape[0], device=x.device)
    coords = ember.stack(_unravel_index(places, tuple(x.shape)), -1) if x.ndim else None
    if coords is None:  # a 0-d input: rows of no coordinates
        coords = ember.zeros((hit.shape[0], 0), dtype=ember.int64, device=x.device)
    out = ember.full((size + 1, x.ndim), fill_value, dtype=ember.int64, device=x.device)
    out = out.scatter(0, row.unsqueeze(-1).expand(coords.shape), coords)
    return out[:size].contiguous()


def _np_nonzero_static(x, size, fill_value=-1):
    found = np.argwhere(x)[:size]
    pad = np.full((size - found.shape[0], np.ndim(x)), fill_value, np.int64)
    return np.concatenate([found.astype(np.int64), pad], 0)


# ---- unravel_index ---------------------------------------------------------------------------
def check_unravel_indices(indices) -> None:
    """PyTorch's TypeError, before the row's dtype check (ember.unravel_index calls it)."""
    if isinstance(indices, ember.Tensor) and indices.dtype not in DTYPES_INT:
        raise TypeError(
            f"expected 'indices' to be integer dtype, but got torch.{indices.dtype.name}"
        )


def _unravel_shape(indices, shape) -> tuple:
    """PyTorch's checks of shape (torch/functional.py), each with its error type and words."""
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    elif not isinstance(shape, (list, tuple)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for dim in shape:
        if not isinstance(dim, numbers.Integral):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(dim)}")
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    return shape


def _coefficients(shape: tuple) -> list:
    """Each dim's element stride in a contiguous tensor of ``shape``."""
    coefs, step = [], 1
    for d in reversed(shape):
        coefs.append(step)
        step *= d
    return coefs[::-1]


def _unravel_index(indices, shape):
    shape = _unravel_shape(indices, shape)
    coefs = ember.tensor(_coefficients(shape), dtype=ember.int64, device=indices.device)
    sizes = ember.tensor(list(shape), dtype=ember.int64, device=indices.device)
    coords = indices.unsqueeze(-1).floor_divide(coefs) % sizes
    return coords.unbind(-1)


def _np_unravel_index(indices, shape):
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    coefs = np.array(_coefficients(shape), np.int64)
    coords = np.floor_divide(np.expand_dims(indices, -1), coefs) % np.array(shape, np.int64)
    return tuple(np.asarray(c) for c in np.moveaxis(coords, -1, 0))


ROWS = [
    OpDef(
        "fill(Tensor input, Scalar value) -> Tensor",
        Kind.COPY,
        _np_fill,
        decomposition=_fill,
        method=False,
        samples="fill_value",
        out=None,
        notes="a new tensor like input holding value (a number or a 0-d tensor)",
    ),
    OpDef(
        "nonzero_static(Tensor input, *, int size, int fill_value=-1) -> Tensor",
        Kind.SORT,
        _np_nonzero_static,
        promotion=Promotion.LONG,
        differentiable=False,
        decomposition=_nonzero_static,
        samples="nonzero_static",
        out=Out(
            "exact",
            None,
            message="nonzero_static: Expected out tensor to have scalar type {want} but got "
            "scalar type{got}",
        ),
        notes="nonzero's first size rows, padded with fill_value rows up to size",
    ),
    OpDef(
        "unravel_index(Tensor indices, int[] shape) -> Tensor[]",
        Kind.INDEX,
        _np_unravel_index,
        promotion=Promotion.LONG,
        dtypes=DTYPES_INT,
        differentiable=False,
        decomposition=_unravel_index,
        method=False,
        samples="unravel_index",
        frontend=True,
        out=None,
        notes="floor_divide by each dim's stride, modulo its size (PyTorch's formula); "
        "a flat index out of range wraps, as in PyTorch",
    ),
]
