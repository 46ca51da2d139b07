"""The mask machinery every masked op shares, as torch/masked/_ops.py has it: the canonical
input mask (broadcast to the input, bool), each reduction's identity, and the input with its
masked-out elements replaced by that identity.

Replacing is an ``ember.where``, so the masked-out elements get a zero gradient, as PyTorch's
strided path gives them."""

from __future__ import annotations

import math

import numpy as np

import ember

# reduction -> its identity on floating inputs, and on integer inputs (a number, or the name of
# the dtype's bound: argmax and logsumexp fill with amax's, argmin with amin's)
_IDENTITIES = {
    "sum": (0, 0),
    "prod": (1, 1),
    "amax": (-math.inf, "min"),
    "amin": (math.inf, "max"),
    "logsumexp": (-math.inf, "min"),
}
# Reductions whose identity PyTorch also gives complex inputs (-inf + 0j)
_COMPLEX_IDENTITIES = frozenset({"sum", "prod", "logsumexp"})


def canonical_dim(dim, ndim: int) -> tuple:
    """``dim`` as a sorted tuple of non-negative dims (None and ``()``: all of them)."""
    if dim == () or dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        dims.append(d % ndim)
    return tuple(sorted(dims))


def input_mask(input, mask):
    """``mask`` broadcast to ``input``'s shape, as bool."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than "
                "of the input)"
            )
        mask = ember.broadcast_to(mask, input.shape)
    return mask.to(dtype=ember.bool)


def identity(reduction: str, input):
    """The value that leaves ``reduction`` unchanged, as a 0-d tensor of ``input``'s dtype."""
    dtype = input.dtype
    floating, integral = _IDENTITIES[reduction]
    if dtype.is_floating_point or (dtype.is_complex and reduction in _COMPLEX_IDENTITIES):
        value = floating
    elif not isinstance(integral, str):  # sum and prod: bool inputs too
        value = integral
    elif dtype.is_signed or dtype == ember.uint8:
        value = getattr(np.iinfo(dtype.np), integral)
    else:
        raise NotImplementedError(f"identity of {reduction} on {dtype} input")
    return ember.tensor(value, dtype=dtype, device=input.device)


def fill(reduction: str, input, mask):
    """``input`` with its masked-out elements replaced by ``reduction``'s identity."""
    if mask is None:
        return input
    return ember.where(input_mask(input, mask), input, identity(reduction, input))


def fill_value(input, mask, value):
    """``input`` with its masked-out elements replaced by ``value`` (a 0-d tensor)."""
    if mask is None:
        return input
    return ember.where(input_mask(input, mask), input, value)
