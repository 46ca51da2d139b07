"""Gamma and Chi2 distributions."""

from __future__ import annotations

import ember

from . import constraints
from ._gamma_grad import standard_gamma_rsample
from .exp_family import ExponentialFamily
from .utils import _batch_shape, broadcast_all, digamma, lgamma, tiny, xlogy

__all__ = ["Chi2", "Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution parameterized by shape ``concentration`` and ``rate``.

    Args:
        concentration (float or Tensor): shape parameter (often alpha).
        rate (float or Tensor): rate parameter, 1 / scale (often beta).
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    # Reparameterized through the implicit gradient of the sampler (see _gamma_grad), as torch.
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = _batch_shape((concentration, rate), (self.concentration,))
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = ("concentration", "rate")
        return self._expand_params(type(self), batch_shape, _instance, names)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = standard_gamma_rsample(self.concentration.expand(shape)) / self.rate.expand(shape)
        # Clamp the value away from 0 but keep the gradient of the unclamped sample, as torch.
        return value + (value.clamp(min=tiny(value.dtype)) - value).detach()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            xlogy(self.concentration, self.rate)
            + xlogy(self.concentration - 1, value)
            - self.rate * value
            - lgamma(self.concentration)
        )

    def entropy(self):
        return (
            self.concentration
            - ember.log(self.rate)
            + lgamma(self.concentration)
            + (1.0 - self.concentration) * digamma(self.concentration)
        )

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return lgamma(x + 1) + (x + 1) * ember.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ember.special.gammainc(self.concentration, self.rate * value)


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom: ``Gamma(0.5 * df, 0.5)``.

    Args:
        df (float or Tensor): shape parameter of the distribution.
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2
