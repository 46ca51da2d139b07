"""Transforms that rearrange or split their input: Reshape, Cat, Stack, CumulativeDistribution."""

from __future__ import annotations

import ember

from . import constraints
from ._transform import Transform
from .utils import _sum_rightmost, lazy_property

__all__ = [
    "CatTransform",
    "CumulativeDistributionTransform",
    "ReshapeTransform",
    "StackTransform",
]


def _split_shape(shape, event_shape):
    """(batch part, event part) of ``shape`` for an event of ``event_shape``, as torch checks."""
    if len(shape) < len(event_shape):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(event_shape)
    if tuple(shape[cut:]) != tuple(event_shape):
        raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {event_shape}")
    return tuple(shape[:cut])


class ReshapeTransform(Transform):
    """Unit-Jacobian reshape of the rightmost part of a tensor from ``in_shape`` to ``out_shape``.

    Args:
        in_shape (ember.Size): the input event shape.
        out_shape (ember.Size): the output event shape.
        cache_size (int): size of the cache, 0 or 1.
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape = ember.Size(in_shape)
        self.out_shape = ember.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch_shape = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch_shape + tuple(self.out_shape))

    def _inverse(self, y):
        batch_shape = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch_shape + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        return ember.Size(_split_shape(shape, self.in_shape) + tuple(self.out_shape))

    def inverse_shape(self, shape):
        return ember.Size(_split_shape(shape, self.out_shape) + tuple(self.in_shape))


def _check_along(t, dim, size, letter, what, noun=None):
    """torch's checks (and messages) that ``t`` has ``dim`` and that it is ``size`` long."""
    if not (-t.dim() <= dim < t.dim()):
        raise AssertionError(
            f"dim {dim} out of range for {noun or letter} with {t.dim()} dimensions"
        )
    if t.size(dim) != size:
        raise AssertionError(f"{letter}.size({dim}) = {t.size(dim)} must equal {what} {size}")


def _with_cache_all(tseq, cache_size):
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")
    return [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the ``lengths[i]``-long piece of ``dim``, as ``ember.cat``.

    Args:
        tseq (list of Transform): the transforms, one per piece.
        dim (int): the dimension cut into pieces.
        lengths (list of int, optional): the piece lengths (default: 1 each).
        cache_size (int): size of the cache, 0 or 1.

    Example:
        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[2, 2])
        >>> t(ember.zeros(4))  # tensor([1., 1., 0., 0.])
    """

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        tseq = _with_cache_all(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = list(lengths) if lengths is not None else [1] * len(tseq)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(
                f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})"
            )
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, t):
        start = 0
        for trans, length in zip(self.transforms, self.lengths):
            yield trans, t.narrow(self.dim, start, length)
            start = start + length

    def _call(self, x):
        _check_along(x, self.dim, self.length, "x", "length", "tensor")
        return ember.cat([trans(piece) for trans, piece in self._pieces(x)], dim=self.dim)

    def _inverse(self, y):
        _check_along(y, self.dim, self.length, "y", "length", "tensor")
        return ember.cat([trans.inv(piece) for trans, piece in self._pieces(y)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_along(x, self.dim, self.length, "x", "length")
        _check_along(y, self.dim, self.length, "y", "length")
        logdetjacs = []
        for (trans, xs), (_, ys) in zip(self._pieces(x), self._pieces(y)):
            logdetjac = trans.log_abs_det_jacobian(xs, ys)
            if trans.event_dim < self.event_dim:
                logdetjac = _sum_rightmost(logdetjac, self.event_dim - trans.event_dim)
            logdetjacs.append(logdetjac)
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim = dim + self.event_dim
        # The pieces' Jacobians stay apart while dim is a batch dim; inside the event they add.
        return ember.cat(logdetjacs, dim=dim) if dim < 0 else sum(logdetjacs)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to slice ``i`` of ``dim``, as ``ember.stack``.

    Args:
        tseq (list of Transform): the transforms, one per slice.
        dim (int): the dimension sliced.
        cache_size (int): size of the cache, 0 or 1.

    Example:
        >>> t = StackTransform([ExpTransform(), identity_transform], dim=1)
        >>> t(ember.zeros(3, 2))  # column 0 through exp, column 1 unchanged
    """

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        tseq = _with_cache_all(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        _check_along(x, self.dim, len(self.transforms), "x", "len(transforms)", "tensor")
        ys = [trans(s) for s, trans in zip(self._slice(x), self.transforms)]
        return ember.stack(ys, dim=self.dim)

    def _inverse(self, y):
        _check_along(y, self.dim, len(self.transforms), "y", "len(transforms)", "tensor")
        xs = [trans.inv(s) for s, trans in zip(self._slice(y), self.transforms)]
        return ember.stack(xs, dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_along(x, self.dim, len(self.transforms), "x", "len(transforms)")
        _check_along(y, self.dim, len(self.transforms), "y", "len(transforms)")
        parts = zip(self._slice(x), self._slice(y), self.transforms)
        return ember.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in parts], dim=self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """Transform via a distribution's cdf, ``y = distribution.cdf(x)``, onto (0, 1).

    Args:
        distribution (Distribution): the distribution whose cdf (and icdf as the inverse) is
            used; its support is the domain.
        cache_size (int): size of the cache, 0 or 1.
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
