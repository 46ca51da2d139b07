"""``Tensor.dim_order``: the order of a tensor's dims in memory, outermost first.

PyTorch's algorithm (``Tensor.dim_order``, and for one tensor the permutation of
``torch/_prims_common``'s ``compute_elementwise_output_logical_to_physical_perm``): an
insertion sort of the dims by stride, where a tie of equal strides keeps the longer dim
outside, and zero strides compare equal to any.
"""

from __future__ import annotations

import itertools

from . import _memory_format
from ._tensor import Tensor

_BAD_CHECK = "The ambiguity_check argument must be a bool or a list of memory formats."


def _compare(shape: tuple, strides: tuple, a: int, b: int) -> int:
    """1: dim ``a`` goes inside ``b``; -1: outside; 0: either (PyTorch's ``should_swap``)."""

    def ge(x: int, y: int) -> bool:
        if y == 0:
            return True
        if x == 0:
            return False
        return x >= y or x % y == 0

    stride_a, stride_b = strides[a], strides[b]
    if stride_a == 0 or stride_b == 0:
        return 0
    if stride_a == stride_b:
        return 0 if ge(shape[b], shape[a]) else 1
    if ge(stride_b, stride_a):
        return -1
    if ge(stride_a, stride_b):
        return 1
    return 0


def _perm(t: Tensor, check: bool) -> tuple[list, bool]:
    ndim = t.ndim
    if ndim == 0:
        return [], False
    if ndim == 1:
        return [0], False
    contiguous = t.is_contiguous()
    channels_last = t.is_contiguous(memory_format=_memory_format.channels_last)
    if contiguous and not channels_last:
        return list(range(ndim)), False
    if channels_last and not contiguous:
        return [0, *range(2, ndim), 1], False
    shape, strides = t._shape, t._stride
    perm = list(reversed(range(ndim)))  # sorted back to front, reversed on the way out
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            order = _compare(shape, strides, perm[dim0], perm[dim1])
            if order > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif order < 0:
                break
    ambiguous = check and any(
        _compare(shape, strides, perm[i], perm[i + 1]) != -1 for i in range(ndim - 1)
    )
    return list(reversed(perm)), ambiguous


def dim_order(self: Tensor, *, ambiguity_check: bool | list = False) -> tuple:
    """The dims of this tensor from the outermost in memory to the innermost.

    Args:
        ambiguity_check: True raises when the order is not unique (a dim of length 1, or two
            equal strides); a list of memory formats raises unless the tensor is contiguous in
            exactly one of them, when the order is not unique.

    Returns:
        A tuple of dim indices.

    Example:
        >>> ember.empty((2, 3, 5, 7)).transpose(1, 2).dim_order()
        (0, 2, 1, 3)
    """
    formats_ok = isinstance(ambiguity_check, list) and all(
        isinstance(f, _memory_format.memory_format) for f in ambiguity_check
    )
    if not isinstance(ambiguity_check, bool) and not formats_ok:
        raise TypeError(_BAD_CHECK)
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check_multiple = ambiguity_check if isinstance(ambiguity_check, bool) else True
    if check_multiple and _multiple_orders(self):
        legal = sum(1 for f in formats if self.is_contiguous(memory_format=f))
        if legal != 1:
            raise RuntimeError(
                "The tensor does not have unique dim order, or cannot map to exact one of the "
                "given memory formats."
            )
    perm, ambiguous = _perm(self, bool(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(perm)


def _multiple_orders(t: Tensor) -> bool:
    """A dim of length 1, or two neighbouring equal strides: more than one order is legal."""
    duplicate = any(a == b for a, b in itertools.pairwise(t._stride))
    return duplicate or any(size == 1 for size in t._shape)
