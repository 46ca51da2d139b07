"""hash_tensor: PyTorch's xor reduction of a tensor's 64-bit bit patterns, a fingerprint that
changes when any element's bits do (checkpoint and activation checks compare them).

Composed of existing ops: the elements widened to float64 or int64 and read as int64 bits, then
folded pairwise (halves xor-ed together, log2(n) steps), then read as uint64."""

from __future__ import annotations

import math

import numpy as np

import ember

from ..kinds.reduction import reduced_dims
from ..opdef import DTYPES_FLOAT, DTYPES_INT_BOOL, OUT_EXACT, Kind, OpDef, Promotion


def _bits(x):
    """x's elements as the int64 bit patterns of their 64-bit widening (as PyTorch upcasts)."""
    if x.is_floating_point():
        return x.to(ember.float64).view(ember.int64)
    return x.to(ember.int64)


_HASHABLE = DTYPES_FLOAT | DTYPES_INT_BOOL  # PyTorch's: no float8, no uint16/32/64


def _check(x, dim, mode: int) -> None:
    if x.dtype not in _HASHABLE:
        raise NotImplementedError(f'"hash_tensor" not implemented for {x.dtype.name}')
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if x.numel() == 0 and (dim is None or (isinstance(dim, (list, tuple)) and not dim)):
        raise RuntimeError(
            "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
            "Specify the reduction dim with the 'dim' argument."
        )


def _hash_tensor(x, dim=(), keepdim=False, mode=0):
    _check(x, dim, mode)
    dims = reduced_dims(dim, x.ndim, "hash_tensor")
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    kept = [d for d in range(x.ndim) if d not in dims]
    bits = _bits(x).permute(*kept, *dims)
    width = math.prod(x.shape[d] for d in dims)  # not -1: a kept dim may be empty
    folded = bits.reshape(*[x.shape[d] for d in kept], width)
    while folded.shape[-1] > 1:
        width = folded.shape[-1]
        half = (width + 1) // 2
        low, high = folded[..., :half], folded[..., half:]
        if width % 2:  # the odd one out is xor-ed with 0: itself
            low, last = low[..., :-1], low[..., -1:]
            folded = ember.cat([low ^ high, last], -1)
        else:
            folded = low ^ high
    result = folded.squeeze(-1)
    if keepdim:
        result = result.reshape([1 if d in dims else s for d, s in enumerate(x.shape)])
    return result.view(ember.uint64)


def _np_hash_tensor(x, dim=(), keepdim=False, mode=0):
    x = np.asarray(x)
    wide = x.astype(np.float64 if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else np.int64)
    axis = None if dim is None or (isinstance(dim, (list, tuple)) and not dim) else dim
    axis = tuple(axis) if isinstance(axis, list) else axis
    return np.bitwise_xor.reduce(wide.view(np.uint64), axis=axis, keepdims=keepdim)


ROWS = [
    OpDef(
        "hash_tensor(Tensor input, int[1] dim=[], *, bool keepdim=False, int mode=0) -> Tensor",
        Kind.REDUCTION,
        _np_hash_tensor,
        promotion=Promotion.UINT64,
        dtypes=_HASHABLE,
        decomposition=_hash_tensor,
        differentiable=False,
        samples="reduction_nonempty",
        out=OUT_EXACT,
        notes="xor of the 64-bit bit patterns (floats as float64, integers as int64), as uint64",
    ),
]
