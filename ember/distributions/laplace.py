"""Laplace distribution parameterized by ``loc`` and ``scale``."""

from __future__ import annotations

import ember

from . import constraints
from .distribution import Distribution
from .utils import _batch_shape, broadcast_all, eps

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace distribution parameterized by ``loc`` and ``scale``.

    Args:
        loc (float or Tensor): mean of the distribution.
        scale (float or Tensor): scale of the distribution.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape((loc, scale), (self.loc,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2**0.5) * self.scale

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        # u in [eps - 1, 1) as torch, so log1p(-|u|) stays finite.
        u = ember.empty(shape, dtype=self.loc.dtype, device=self.loc.device)
        u = u.uniform_(eps(self.loc.dtype) - 1, 1)
        return self.loc - self.scale * u.sign() * ember.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -ember.log(2 * self.scale) - ember.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * ember.expm1(-z.abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * ember.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + ember.log(2 * self.scale)
