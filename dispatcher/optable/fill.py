"""Fills at chosen positions: ``index_fill`` (whole slices along a dim). A composite over
``where``, so every device runs it and autograd comes for free; the checks are PyTorch's."""

from __future__ import annotations

import numpy as np

import ember

from ..kinds._common import wrap_dim
from ..kinds._limits import check_scalar_fits
from ..opdef import Kind, OpDef


def fill_value(name: str, x, value):
    """``value`` as a 0-d tensor of x's dtype and device, checked as PyTorch does: a number the
    dtype holds, or a 0-d tensor (a CPU one read as a number, so checked too)."""
    if not isinstance(value, ember.Tensor):
        check_scalar_fits(name, value, x.dtype)
        return ember.tensor(value, dtype=x.dtype, device=x.device)
    if value.ndim:
        raise RuntimeError(
            f"{name}(): {name}_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    if value.dtype is not x.dtype and value.device.type == "cpu":
        check_scalar_fits(name, value.item(), x.dtype)
    return value.to(x.dtype)


def _positions(x, dim: int, index):
    """A bool tensor that broadcasts against x: True along ``dim`` at ``index``."""
    if index.dtype is not ember.int64:  # a list fails here; Op.__call__ names the argument
        raise IndexError(f"index_fill_(): Expected dtype int64 for index. (got {index.dtype.name})")
    if index.ndim > 1:
        raise RuntimeError(
            f"index_fill(): Index has to be a vector/scalar (index of shape {list(index.shape)})"
        )
    size = x.shape[dim] if x.ndim else 1
    index = index.reshape(-1).to(x.device)
    if index.numel() and index.device.type != "meta":  # meta has shapes, not values
        low, high = int(index.min().item()), int(index.max().item())
        if low < -size or high >= size:
            bad = high if high >= size else low
            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    hit = ember.zeros(size, dtype=ember.bool, device=x.device)
    hit[index] = True
    return hit.reshape((size,) + (1,) * (x.ndim - dim - 1)) if x.ndim else hit.reshape(())


def _index_fill(x, dim, index, value):
    dim = wrap_dim(dim, x.ndim, "index_fill")
    return ember.where(_positions(x, dim, index), fill_value("index_fill", x, value), x)


def _np_index_fill(x, dim, index, value):
    out = np.array(x, copy=True)
    if not x.ndim:
        return np.asarray(value, x.dtype) if np.size(index) else out
    at = [slice(None)] * x.ndim
    at[dim] = np.reshape(index, -1)
    out[tuple(at)] = value
    return out


ROWS = [
    OpDef(
        "index_fill(Tensor input, int dim, Tensor index, Scalar value) -> Tensor",
        Kind.INDEX,
        _np_index_fill,
        decomposition=_index_fill,
        samples="index_fill",
        inplace=True,
        out=None,
        notes="value is a number or a 0-d tensor, as in PyTorch",
    ),
]
