"""Exponential distribution parameterized by ``rate``."""

from __future__ import annotations

import ember

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _batch_shape, broadcast_all, tiny

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Exponential distribution parameterized by ``rate``.

    Args:
        rate (float or Tensor): rate = 1 / scale of the distribution.
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape((rate,), (self.rate,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return ember.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        # Inverse CDF of a uniform on (tiny, 1]: ember has no exponential_ kernel yet.
        u = ember.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        return -ember.log((1 - u).clamp(min=tiny(self.rate.dtype))) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ember.exp(-self.rate * value)

    def icdf(self, value):
        return -ember.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - ember.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -ember.log(-x)
