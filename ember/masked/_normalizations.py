"""Masked ops that keep the input's shape (cumsum, cumprod, softmax, log_softmax, softmin,
normalize) and the masked logaddexp: the masked-out elements become an identity (0, 1, -inf,
inf) before the plain op, so they add nothing (softmax gives them 0)."""

from __future__ import annotations

import ember

from . import _reductions
from ._mask import canonical_dim, fill


def _scan(scan, identity: str, input, dim, dtype, mask):
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return scan(fill(identity, input, mask), d, dtype=dtype).to(dtype=dtype)


def cumsum(input, dim, *, dtype=None, mask=None):
    """Cumulative sum along ``dim`` over the elements that ``mask`` keeps (the others add 0)."""
    return _scan(ember.cumsum, "sum", input, dim, dtype, mask)


def cumprod(input, dim, *, dtype=None, mask=None):
    """Cumulative product along ``dim`` over the elements that ``mask`` keeps (the others
    multiply by 1)."""
    return _scan(ember.cumprod, "prod", input, dim, dtype, mask)


def _softmax(function, identity: str, input, dim, dtype, mask):
    dtype = input.dtype if dtype is None else dtype
    d = canonical_dim(dim, input.ndim)[0]
    return function(fill(identity, input, mask), d, dtype=dtype)


def softmax(input, dim, *, dtype=None, mask=None):
    """Softmax along ``dim`` over the elements that ``mask`` keeps: masked-out elements get 0,
    a fully masked-out slice nan.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0])
        >>> ember.masked.softmax(x, 0, mask=ember.tensor([True, False, True]))
        tensor([0.1192, 0.0000, 0.8808])
    """
    return _softmax(ember.nn.functional.softmax, "amax", input, dim, dtype, mask)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """Log of :func:`softmax` (masked-out elements get -inf)."""
    return _softmax(ember.nn.functional.log_softmax, "amax", input, dim, dtype, mask)


def softmin(input, dim, *, dtype=None, mask=None):
    """Softmin along ``dim`` over the elements that ``mask`` keeps (masked-out elements get 0)."""
    return _softmax(ember.nn.functional.softmin, "amin", input, dim, dtype, mask)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """``input`` divided by its masked ``ord``-norm along ``dim`` (at least ``eps``); the
    masked-out elements become 0."""
    dtype = input.dtype if dtype is None else dtype
    norm = _reductions.norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = ember.maximum(norm, norm.new_full([], eps))
    return ember.divide(fill("sum", input, mask), denom)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """``log(exp(input) + exp(other))`` with each operand's masked-out elements as -inf."""
    dtype = input.dtype if dtype is None else dtype
    a = fill("amax", input, input_mask)
    b = fill("amax", other, other_mask)
    return ember.logaddexp(a, b).to(dtype=dtype)
