"""Masked statistics without an identity (mean, median, var, std): a fully masked-out slice
gives nan, as torch.masked's strided results do."""

from __future__ import annotations

import math

import ember

from . import _reductions
from ._mask import canonical_dim, fill_value, input_mask


def _count(input, dim, keepdim, mask):
    """How many elements ``mask`` keeps per reduced slice (int64)."""
    if mask is None:
        ones = ember.ones(input.shape, dtype=ember.int64, device=input.device)
        return _reductions.sum(ones, dim, keepdim=keepdim)
    return ember.sum(mask, canonical_dim(dim, input.ndim), bool(keepdim))


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the elements of ``input`` that ``mask`` keeps, over ``dim`` (all dims when None).

    Args:
        input: the tensor to reduce.
        dim: a dim or a sequence of dims; None reduces all of them.
        keepdim: keep the reduced dims with size 1.
        dtype: the result's dtype (floating); default ``input``'s, which must then be floating.
        mask: bool tensor broadcastable to ``input``: True keeps an element. None keeps all.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 9.0], [4.0, 5.0, 6.0]])
        >>> ember.masked.mean(x, 1, mask=ember.tensor([[True, True, False], [True] * 3]))
        tensor([1.5000, 5.0000])
    """
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either a floating "
            f"point or complex dtype. Got: {dtype}"
        )
    mask = None if mask is None else input_mask(input, mask)
    total = _reductions.sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median of the elements of ``input`` that ``mask`` keeps, along one ``dim`` (nan where a
    slice is fully masked out; integer inputs must have none)."""
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    floating = input.dtype.is_floating_point
    if not floating:
        input = input.to(dtype=ember.float32)
    nan = ember.tensor(math.nan, dtype=input.dtype, device=input.device)
    output = ember.nanmedian(fill_value(input, mask, nan), d, keepdim).values
    if floating:
        return output
    if bool(ember.isnan(output).any()):
        raise ValueError(
            "masked median expects no fully masked out rows if dtype is not floating point"
        )
    return output.to(dtype=dtype)


def _correction(unbiased, correction) -> float:
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    if correction is not None:
        return float(correction)
    return 0.0 if unbiased is False else 1.0


def _inexact(dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    correction = _correction(unbiased, correction)
    if dtype is None:
        dtype = input.dtype if _inexact(input.dtype) else ember.float32
    compute = dtype if _inexact(dtype) else ember.float32
    mask = None if mask is None else input_mask(input, mask)
    count = _count(input, dim, True, mask)
    mean = ember.divide(_reductions.sum(input, dim, keepdim=True, dtype=dtype, mask=mask), count)
    x = ember.subtract(input, mean)
    total = _reductions.sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute, mask=mask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real = compute.to_real() if compute.is_complex else compute  # counts are real
        count = ember.subtract(count.to(real), correction)
        count = ember.maximum(count, count.new_zeros([]))
    output = ember.divide(total, count).to(dtype=dtype)
    return ember.sqrt(output) if take_sqrt else output


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Variance of the elements of ``input`` that ``mask`` keeps, over ``dim``, with
    ``correction`` (default 1, Bessel's; ``unbiased=False`` is 0); nan where fully masked out."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """Standard deviation: the square root of :func:`var` (same arguments)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)
