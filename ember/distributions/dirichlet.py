"""Dirichlet and Beta distributions (samples from normalized gammas)."""

from __future__ import annotations

from numbers import Number

import ember
import ember.nn.functional as F

from . import constraints
from ._gamma_grad import dirichlet_rsample
from .exp_family import ExponentialFamily
from .utils import broadcast_all, digamma, lgamma, xlogy

__all__ = ["Beta", "Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution parameterized by ``concentration`` (over the last dimension).

    Args:
        concentration (Tensor): concentration parameter of the distribution (often alpha).
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    # As torch: _sample_dirichlet draws, _dirichlet_grad (the Beta marginal's implicit
    # gradient) in the backward.
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        event = tuple(self.event_shape)
        return self._expand_params(
            Dirichlet, batch_shape, _instance, ("concentration",), param_event=event
        )

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return dirichlet_rsample(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (
            xlogy(self.concentration - 1.0, value).sum(-1)
            + lgamma(self.concentration.sum(-1))
            - lgamma(self.concentration).sum(-1)
        )

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # All concentrations below 1: the density peaks at a vertex.
        vertex = F.one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1]).to(mode.dtype)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        return ember.where(mask, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (
            lgamma(self.concentration).sum(-1)
            - lgamma(a0)
            - (k - a0) * digamma(a0)
            - ((self.concentration - 1.0) * digamma(self.concentration)).sum(-1)
        )

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta distribution parameterized by ``concentration1`` and ``concentration0``.

    Args:
        concentration1 (float or Tensor): 1st concentration parameter (often alpha).
        concentration0 (float or Tensor): 2nd concentration parameter (often beta).
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            both = ember.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = ember.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def sample(self, sample_shape=()):
        return self._dirichlet.sample(sample_shape).select(-1, 0)

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = ember.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return lgamma(x) + lgamma(y) - lgamma(x + y)
