"""Half-normal and half-Cauchy distributions: ``|X|`` for a centred Normal or Cauchy ``X``."""

from __future__ import annotations

import math

import ember

from . import constraints
from ._transforms_elementwise import AbsTransform
from .cauchy import Cauchy
from .normal import Normal
from .transformed_distribution import TransformedDistribution

__all__ = ["HalfCauchy", "HalfNormal"]


class _Folded(TransformedDistribution):
    # |X| for X symmetric around 0: density doubles on [0, inf), CDF is 2 F(x) - 1.
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """Half-normal distribution: ``X ~ Normal(0, scale); Y = |X| ~ HalfNormal(scale)``.

    Args:
        scale (float or Tensor): scale of the full Normal distribution.
    """

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        base_dist = Normal(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """Half-Cauchy distribution: ``X ~ Cauchy(0, scale); Y = |X| ~ HalfCauchy(scale)``.

    Args:
        scale (float or Tensor): scale of the full Cauchy distribution.
    """

    def __init__(self, scale, validate_args: bool | None = None) -> None:
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        shape = tuple(self._extended_shape())
        return ember.full(shape, math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance
