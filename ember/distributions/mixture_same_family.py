"""MixtureSameFamily: a Categorical mixture of components from one batched distribution."""

from __future__ import annotations

import ember

from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


def _check_shapes(mixture, component):
    if not isinstance(mixture, Categorical):
        raise ValueError(
            " The Mixture distribution needs to be an  instance of ember.distributions.Categorical"
        )
    if not isinstance(component, Distribution):
        raise ValueError(
            "The Component distribution needs to be an instance of ember.distributions.Distribution"
        )
    mdbs = mixture.batch_shape
    cdbs = component.batch_shape[:-1]
    for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
        if size1 != 1 and size2 != 1 and size1 != size2:
            raise ValueError(
                f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                f"compatible with `component_distribution.batch_shape`({cdbs})"
            )
    km = mixture.logits.shape[-1]
    kc = component.batch_shape[-1]
    if km != kc:
        raise ValueError(
            f"`mixture_distribution component` ({km}) does not"
            f" equal `component_distribution.batch_shape[-1]` ({kc})"
        )
    return km


class MixtureSameFamily(Distribution):
    """Mixture of ``k`` components of one family, selected by a Categorical.

    Args:
        mixture_distribution (Categorical): the component selection, with ``k`` events.
        component_distribution (Distribution): the components, rightmost batch dimension ``k``.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = _check_shapes(mixture_distribution, component_distribution)
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(
            component_distribution.batch_shape[:-1], event_shape, validate_args=validate_args
        )

    def expand(self, batch_shape, _instance=None):
        batch_shape = ember.Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,)
        )
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        event_shape = new._component_distribution.event_shape
        Distribution.__init__(new, batch_shape, event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    @property
    def mean(self):
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return ember.sum(probs * self.component_distribution.mean, dim=-1 - self._event_ndims)

    @property
    def variance(self):
        # Law of total variance: E[Var(X | k)] + Var(E[X | k]).
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = ember.sum(probs * self.component_distribution.variance, dim=dim)
        spread = (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)
        return mean_cond_var + ember.sum(probs * spread, dim=dim)

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return ember.sum(cdf_x * self.mixture_distribution.probs, dim=-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # [S, B, k]
        log_mix_prob = ember.log_softmax(self.mixture_distribution.logits, dim=-1)  # [B, k]
        return ember.logsumexp(log_prob_x + log_mix_prob, dim=-1)  # [S, B]

    def sample(self, sample_shape=()):
        with ember.no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_shape = tuple(mix_sample.shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.expand(mix_shape + (1,) + es)
            return ember.gather(comp_samples, gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        args_string = f"\n  {self.mixture_distribution},\n  {self.component_distribution}"
        return "MixtureSameFamily(" + args_string + ")"
