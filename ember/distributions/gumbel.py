"""Gumbel (type-1 extreme value) distribution."""

from __future__ import annotations

import math

import ember

from . import constraints
from ._transforms_elementwise import AffineTransform, ExpTransform
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _batch_shape, broadcast_all, eps, tiny

__all__ = ["Gumbel"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


class Gumbel(TransformedDistribution):
    """Gumbel distribution: ``loc - scale * log(-log(U))`` for ``U ~ Uniform(tiny, 1 - eps)``.

    Args:
        loc (float or Tensor): location parameter of the distribution.
        scale (float or Tensor): scale parameter of the distribution.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        lo, hi = tiny(self.loc.dtype), 1 - eps(self.loc.dtype)
        if _batch_shape((loc, scale), (self.loc,)) == ():
            base_dist = Uniform(lo, hi, validate_args=validate_args)
        else:
            base_dist = Uniform(
                ember.full_like(self.loc, lo),
                ember.full_like(self.loc, hi),
                validate_args=validate_args,
            )
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-ember.ones_like(self.scale)),
            ExpTransform().inv,
            AffineTransform(loc=loc, scale=-self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
