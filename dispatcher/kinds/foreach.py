"""Runners of the multi-tensor rows (``optable/foreach.py``): argument checks (PyTorch's), then
one kernel call over the whole list when the backend has one and the list is of one device and
one floating dtype; the decomposition (an op per tensor) otherwise.

``_foreach_norm``: ``kernel(out, tensors, ord)`` writes the norm of each (contiguous) tensor
into ``out``, a 1-d tensor of the list's length; the results are 0-dim views of it.
``_foreach_mul_`` by a scalar: ``kernel(tensors, scale)`` multiplies every element of the
(contiguous) tensors by the Python float ``scale``; ``_foreach_add_``: ``kernel(tensors,
scalar)`` adds the Python float ``scalar`` likewise.
"""

from __future__ import annotations

import math
import numbers

from ember._tensor import Tensor, empty

from ._common import check_dtypes
from .view import _view


def _check_list(op, tensors) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{op.name}: Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{op.name}(): argument 'self' must be tuple of Tensors, not {type(t).__name__}"
            )
    return tensors


def _one_kernel(op, tensors):
    """The kernel that takes the whole list at once, or None (mixed devices or dtypes, a dtype
    the backend has no kernel for)."""
    first = tensors[0]
    device, dtype = first._storage.device, first._dtype
    if not dtype.is_floating_point or dtype.is_complex:
        return None
    for t in tensors:
        if t._storage.device is not device or t._dtype is not dtype:
            return None
    return op.kernel(device.type, dtype)


def _packed(tensors) -> list:
    return [t if t.is_contiguous() else t.contiguous() for t in tensors]


def norm(op, tensors, ord=2, dtype=None):
    tensors = _check_list(op, tensors)
    if not isinstance(ord, numbers.Real):
        raise TypeError(f"{op.name}(): argument 'ord' must be Number, not {type(ord).__name__}")
    check_dtypes(op, (tensors, ord, dtype))
    kernel = None
    if dtype is None or dtype is tensors[0]._dtype:
        kernel = _one_kernel(op, tensors)
    if kernel is not None and math.isinf(ord) and any(t.numel() == 0 for t in tensors):
        kernel = None  # the decomposition raises vector_norm's error (no identity)
    if kernel is None:
        return op.decomposition(tensors, ord, dtype)
    first = tensors[0]
    out = empty((len(tensors),), first._dtype, first._storage.device)
    kernel(out, _packed(tensors), float(ord))
    return [_view(out, (), (), i) for i in range(len(tensors))]


def mul_(op, tensors, other):
    tensors = _check_list(op, tensors)
    if isinstance(other, Tensor) and other.dim() != 0:
        raise RuntimeError(
            f"{op.name}: scalar tensor expected to be 0 dim but it has {other.dim()} "
            f"dimensions and {other.numel()} elements."
        )
    check_dtypes(op, (tensors, other))
    kernel = _one_kernel(op, tensors)
    if kernel is not None and isinstance(other, Tensor):
        # the kernel takes the scale as a float, read from the 0-dim tensor: one with data (a
        # meta tensor has none; its decomposition propagates shapes)
        readable = other._storage.device.type != "meta"
        real = other._dtype.is_floating_point and not other._dtype.is_complex
        kernel = kernel if real and readable else None
    elif kernel is not None:
        kernel = kernel if isinstance(other, numbers.Real) and not isinstance(other, bool) else None
    if kernel is None:
        op.decomposition(tensors, other)
        return None
    scale = other.item() if isinstance(other, Tensor) else other  # the kernel takes a float
    _in_place(kernel, tensors, float(scale))
    return None


def add_(op, tensors, scalar):
    """``kernel(tensors, scalar)`` adds a real number to every element (an optimizer's step
    counters); the decomposition for other scalars and lists."""
    tensors = _check_list(op, tensors)
    check_dtypes(op, (tensors, scalar))
    kernel = _one_kernel(op, tensors)
    if kernel is None or isinstance(scalar, bool) or not isinstance(scalar, numbers.Real):
        op.decomposition(tensors, scalar)
        return None
    _in_place(kernel, tensors, float(scalar))
    return None


def _in_place(kernel, tensors, scalar: float) -> None:
    """The kernel over contiguous copies where a tensor is not contiguous, copied back."""
    packed = _packed(tensors)
    kernel(packed, scalar)
    for t, done in zip(tensors, packed):
        if done is not t:
            t.copy_(done)


# The transforms (vmap, forward AD) run these rows as their decompositions, whose parts carry
# the batch dims and tangents a list kernel would not see (kinds/functional.runs_decomposition).
norm.fused = True
mul_.fused = True
add_.fused = True
