"""Runners of composites that a backend may replace with one kernel (the hot surface ops of issue
13: scatter_reduce, median/nanmedian, _unique2).

Each runner calls the device's kernel when the backend has one and the call is one the kernel
covers; otherwise, and below autograd (which records the decomposition's parts, so gradients
keep their formulas), the row's decomposition runs. The transforms (vmap, forward AD, the
compiler) see these rows as plain composites: ``fused`` marks them for
``functional.runs_decomposition``.
"""

from __future__ import annotations

import math

from ember import _dtype as dt
from ember._tensor import Tensor, empty

from ._common import cast, check_dtypes, wrap_dim
from .reduction import squeeze_dims

# scatter_reduce's reductions that the kernels fold, and the value an include_self=False call
# first writes at the scattered places (PyTorch's identities: lowest/highest for amax/amin).
_FOLDED = ("sum", "prod", "amax", "amin")


def _identity(reduce: str, dtype):
    if reduce in ("sum", "prod"):
        return int(reduce == "prod")
    if dtype.is_floating_point:
        return -math.inf if reduce == "amax" else math.inf
    bits = 8 * dtype.itemsize
    low, high = (0, 2**bits - 1) if dtype is dt.uint8 else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return low if reduce == "amax" else high


def _decompose(op, args):
    check_dtypes(op, args)
    return op.decomposition(*args)


def _scatter_fits(x, dim: int, index, src) -> bool:
    """A call the scatter kernels take as it is: int64 index and src of x's dtype and rank on x's
    device, a non-empty index within PyTorch's shape rule. Anything else (errors included)
    goes to the decomposition, which words them."""
    shapes = x._shape, index._shape, src._shape
    if not (len(shapes[0]) == len(shapes[1]) == len(shapes[2]) >= 1) or 0 in index._shape:
        return False
    device = x._storage.device
    if index._storage.device is not device or src._storage.device is not device:
        return False
    return all(
        i <= s and (d == dim or i <= o) for d, (o, i, s) in enumerate(zip(*shapes, strict=True))
    )


def scatter_reduce(op, x, dim, index, src, reduce, include_self=True):
    """``kernel(out, dim, index, src, reduce)`` folds src into out, a copy of x."""
    args = (x, dim, index, src, reduce, include_self)
    if not (isinstance(x, Tensor) and isinstance(index, Tensor) and isinstance(src, Tensor)):
        return _decompose(op, args)
    if reduce not in _FOLDED or x._dtype is dt.bool_ or x._dtype not in op.dtypes:
        return _decompose(op, args)
    if index._dtype is not dt.int64 or src._dtype is not x._dtype or not isinstance(dim, int):
        return _decompose(op, args)
    if not -len(x._shape) <= dim < max(len(x._shape), 1):
        return _decompose(op, args)
    d = wrap_dim(dim, len(x._shape), op.name)
    kernel = op.kernel(x._storage.device.type, x._dtype)
    if kernel is None or not _scatter_fits(x, d, index, src):
        return _decompose(op, args)
    if include_self:
        out = cast(x, x._dtype)  # a fresh copy for the kernel to fold into
    else:
        from ._common import OPS

        out = OPS["scatter"](x, d, index, _identity(reduce, x._dtype))
    kernel(out, d, index, src, reduce)
    return out


def median(op, x, dim, keepdim=False):
    """median/nanmedian along dim: ``kernel(values, indices, x, dim)``, both outputs of x's rank
    with size 1 at dim."""
    from ember.return_types import ValuesIndices

    args = (x, dim, keepdim)
    if not isinstance(x, Tensor) or not x._shape or x._dtype not in op.dtypes:
        return _decompose(op, args)
    if not isinstance(dim, int) or not -len(x._shape) <= dim < len(x._shape):
        return _decompose(op, args)
    d = wrap_dim(dim, len(x._shape), op.name)
    device = x._storage.device
    kernel = op.kernel(device.type, x._dtype)
    if kernel is None or x._shape[d] == 0:
        return _decompose(op, args)
    kept = tuple(1 if i == d else s for i, s in enumerate(x._shape))
    values, indices = empty(kept, x._dtype, device), empty(kept, dt.int64, device)
    if math.prod(kept):
        kernel(values, indices, x, d)
    if not keepdim:
        values, indices = squeeze_dims(values, (d,)), squeeze_dims(indices, (d,))
    return ValuesIndices(values, indices)


def unique(op, x, sorted=True, return_inverse=False, return_counts=False):
    """_unique2: ``kernel(values, inverse, counts, x) -> count`` over the flat input, the
    outputs of its length cut to count."""
    args = (x, sorted, return_inverse, return_counts)
    if not isinstance(x, Tensor) or x._dtype not in op.dtypes:
        return _decompose(op, args)
    device = x._storage.device
    kernel = op.kernel(device.type, x._dtype)
    if kernel is None:
        return _decompose(op, args)
    from ._common import OPS

    flat = OPS["reshape"](x, (-1,))
    n = flat._shape[0]
    values = empty((n,), x._dtype, device)
    inverse = empty(x._shape, dt.int64, device) if return_inverse else None
    counts = empty((n,), dt.int64, device) if return_counts else None
    found = kernel(values, inverse, counts, flat)
    nothing = empty((0,), dt.int64, device)
    if found < n:  # fresh tensors of the found size, not views that hold n elements
        values = cast(OPS["narrow"](values, 0, 0, found), x._dtype)
        counts = None if counts is None else cast(OPS["narrow"](counts, 0, 0, found), dt.int64)
    return (
        values,
        nothing if inverse is None else inverse,
        nothing if counts is None else counts,
    )


for _runner in (scatter_reduce, median, unique):
    _runner.fused = True
