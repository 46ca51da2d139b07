"""Negative binomial distribution."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from . import constraints
from ._binary import BinaryProbsLogits
from ._count_samplers import poisson
from .distribution import Distribution
from .gamma import Gamma
from .utils import (
    _probs_or_logits,
    broadcast_all,
    lazy_property,
    lgamma,
)

__all__ = ["NegativeBinomial"]


class NegativeBinomial(BinaryProbsLogits, Distribution):
    """Number of successes before ``total_count`` failures, success probability ``probs``.

    Args:
        total_count (float or Tensor): non-negative number of negative Bernoulli trials to stop.
        probs (Tensor): event probabilities of success in the half open interval [0, 1).
        logits (Tensor): event log-odds for probabilities of success.
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None) -> None:
        _probs_or_logits(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("total_count", "probs", "logits")
        return self._expand_params(NegativeBinomial, batch_shape, _instance, names)

    @property
    def mean(self):
        return self.total_count * ember.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # A gamma-Poisson mixture: rate ~ Gamma(total_count, exp(-logits)).
        return Gamma(
            concentration=self.total_count, rate=ember.exp(-self.logits), validate_args=False
        )

    def sample(self, sample_shape=()):
        with ember.no_grad():
            return poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(
            -self.logits
        ) + value * F.logsigmoid(self.logits)
        log_normalization = (
            -lgamma(self.total_count + value) + lgamma(1.0 + value) + lgamma(self.total_count)
        )
        log_normalization = ember.where(self.total_count + value == 0.0, 0.0, log_normalization)
        return log_unnormalized_prob - log_normalization
