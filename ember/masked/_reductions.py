"""Masked reductions with an identity: the masked-out elements become the reduction's identity
(0 for sum, 1 for prod, -inf or the dtype's minimum for amax...), then the plain reduction runs.
Defaults, dtypes and errors are torch.masked's (torch/masked/_ops.py)."""

from __future__ import annotations

import math

import ember

from ._mask import canonical_dim, fill

# sum and prod promote these to int64 when no dtype is given, as torch.sum does
_TO_INT64 = ("bool", "uint8", "int8", "int16", "int32")


def _accumulated(input, dtype):
    if dtype is not None:
        return dtype
    return ember.int64 if input.dtype.name in _TO_INT64 else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Sum of the elements of ``input`` that ``mask`` keeps, over ``dim`` (all dims when None).

    Args:
        input: the tensor to reduce.
        dim: a dim or a sequence of dims; None reduces all of them.
        keepdim: keep the reduced dims with size 1.
        dtype: the result's dtype (default: ``input``'s, integers promoted to int64).
        mask: bool tensor broadcastable to ``input``: True keeps an element. None keeps all.

    Example:
        >>> x = ember.tensor([[-3, -2, -1], [0, 1, 2]])
        >>> ember.masked.sum(x, 1, mask=ember.tensor([[True, False, True], [False] * 3]))
        tensor([-4,  0])
    """
    dtype = _accumulated(input, dtype)
    dims = canonical_dim(dim, input.ndim)
    return ember.sum(fill("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Product of the elements of ``input`` that ``mask`` keeps (arguments as :func:`sum`)."""
    dtype = _accumulated(input, dtype)
    dims = canonical_dim(dim, input.ndim)
    result = fill("prod", input, mask).to(dtype=dtype)
    for d in reversed(dims):  # one dim at a time: prod takes a single dim
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def _extreme(reduce, identity: str, input, dim, keepdim, dtype, mask):
    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return reduce(fill(identity, input, mask), dims, bool(keepdim)).to(dtype=dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Maximum of the elements of ``input`` that ``mask`` keeps (arguments as :func:`sum`); a
    fully masked-out slice gives -inf (the dtype's minimum for integers)."""
    return _extreme(ember.amax, "amax", input, dim, keepdim, dtype, mask)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Minimum of the elements of ``input`` that ``mask`` keeps (arguments as :func:`sum`); a
    fully masked-out slice gives inf (the dtype's maximum for integers)."""
    return _extreme(ember.amin, "amin", input, dim, keepdim, dtype, mask)


def _arg_extreme(reduce, identity: str, input, dim, keepdim, dtype, mask):
    # torch.masked casts the indices to the input's dtype when no dtype is given
    dtype = input.dtype if dtype is None else dtype
    return reduce(fill(identity, input, mask), dim, bool(keepdim)).to(dtype=dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the maximum over the elements that ``mask`` keeps, over one ``dim`` (the
    flattened input when None), in ``dtype`` (default: ``input``'s, as torch.masked)."""
    return _arg_extreme(ember.argmax, "amax", input, dim, keepdim, dtype, mask)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the minimum over the elements that ``mask`` keeps (arguments as :func:`argmax`)."""
    return _arg_extreme(ember.argmin, "amin", input, dim, keepdim, dtype, mask)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """``log(sum(exp(x)))`` over the elements of ``input`` that ``mask`` keeps (arguments as
    :func:`sum`); a fully masked-out slice gives -inf."""
    dtype = input.dtype if dtype is None else dtype
    dims = canonical_dim(dim, input.ndim)
    return ember.logsumexp(fill("logsumexp", input, mask), dims, keepdim=keepdim).to(dtype=dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Vector ``ord``-norm of the elements of ``input`` that ``mask`` keeps, over ``dim``
    (masked-out elements count as 0, or as inf for ``ord=-inf``); arguments as :func:`sum`."""
    dtype = input.dtype if dtype is None else dtype
    filled = fill("amin" if ord == -math.inf else "sum", input, mask)
    dims = canonical_dim(dim, input.ndim)
    return ember.linalg.vector_norm(filled, ord, dims, bool(keepdim), dtype=dtype)
