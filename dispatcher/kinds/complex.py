"""Runners of the complex views: ``view_as_real`` and ``view_as_complex`` reinterpret the same
storage (a complex element is two reals), so like every view the core implements them for every
device. ``real_part`` is the view that casts from complex to real use (PyTorch warns there)."""

from __future__ import annotations

import warnings

from ember import _dtype as dt
from ember._tensor import Tensor, contiguous_strides, is_contiguous, make


def _as_view_of(x: Tensor, shape: tuple, stride: tuple, offset: int, dtype) -> Tensor:
    out = make(x._storage, shape, stride, offset, dtype, is_contiguous(shape, stride))
    out._base = x if x._base is None else x._base
    return out


def view_as_real(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"view_as_real(): argument 'input' must be Tensor, not {type(x).__name__}")
    if not x._dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    shape = (*x._shape, 2)
    stride = (*(2 * s for s in x._stride), 1)
    return _as_view_of(x, shape, stride, 2 * x._offset, x._dtype.to_real())


def conj_view(op, x):
    """``_conj``: the same storage with the conjugate bit flipped (dispatcher/mathbits.py)."""
    from ..mathbits import set_bits

    if not x._dtype.is_complex:  # Tensor.conj() returns real tensors themselves
        raise RuntimeError(f"_conj: expected a complex tensor, got {x._dtype.name}")
    view = _as_view_of(x, x._shape, x._stride, x._offset, x._dtype)
    return set_bits(view, not x._conj_bit, x._neg_bit)


def neg_view(op, x):
    """``_neg_view``: the same storage with the negative bit flipped."""
    from ..mathbits import set_bits

    if x._dtype is dt.bool_:
        raise RuntimeError(
            "_neg_view: negation, the `-` operator, on a bool tensor is not supported. If you "
            "are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    view = _as_view_of(x, x._shape, x._stride, x._offset, x._dtype)
    return set_bits(view, x._conj_bit, not x._neg_bit)


def view_as_complex(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(
            f"view_as_complex(): argument 'input' must be Tensor, not {type(x).__name__}"
        )
    if x._dtype is dt.float16:
        raise RuntimeError(
            "view_as_complex: ember has no complex32 (ComplexHalf) dtype for half tensors; "
            "convert to float32 first"
        )
    if x._dtype not in (dt.float32, dt.float64):
        name = dt.SCALAR_NAMES.get(x._dtype, x._dtype.name)
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {name}"
        )
    if not x._shape or x._shape[-1] != 2:
        raise RuntimeError("view_as_complex: Tensor must have a last dimension of size 2")
    if 0 in x._shape:  # no element to lay out: an empty tensor's strides say nothing
        shape = x._shape[:-1]
        return _as_view_of(x, shape, contiguous_strides(shape), 0, x._dtype.to_complex())
    if x._stride[-1] != 1:
        raise RuntimeError("view_as_complex: Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in x._stride[:-1]):
        raise RuntimeError(
            "view_as_complex: Tensor must have a stride divisible by 2 for all but last dimension"
        )
    if x._offset % 2:
        raise RuntimeError("view_as_complex: Tensor must have a storage_offset divisible by 2")
    shape, stride = x._shape[:-1], tuple(s // 2 for s in x._stride[:-1])
    return _as_view_of(x, shape, stride, x._offset // 2, x._dtype.to_complex())


def real_part(t: Tensor) -> Tensor:
    """The real parts of a complex tensor, as a view, with PyTorch's warning for a cast that
    drops the imaginary parts."""
    warnings.warn(
        "Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3
    )
    return part(t, 0)


def part(x: Tensor, which: int) -> Tensor:
    """The real (0) or imaginary (1) parts of complex ``x``, a view of x's shape."""
    stride = tuple(2 * s for s in x._stride)
    return _as_view_of(x, x._shape, stride, 2 * x._offset + which, x._dtype.to_real())
