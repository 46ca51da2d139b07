"""Geometric distribution: number of failures before the first success."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from . import constraints
from ._binary import BinaryProbsLogits
from .distribution import Distribution
from .utils import (
    _batch_shape,
    _probs_or_logits,
    broadcast_all,
    tiny,
)

__all__ = ["Geometric"]


class Geometric(BinaryProbsLogits, Distribution):
    """Geometric distribution over ``{0, 1, ...}`` with success probability ``probs``.

    ``P(X = k) = (1 - p)^k p``.

    Args:
        probs (Number, Tensor): the probability of sampling 1; must be in (0, 1].
        logits (Number, Tensor): the log-odds of sampling 1.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        _probs_or_logits(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        raw = probs if probs is not None else logits
        self._param = param = self.probs if probs is not None else self.logits
        super().__init__(_batch_shape((raw,), (param,)), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{value[~valid]}"
                )

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with ember.no_grad():
            u = ember.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny(self.probs.dtype))
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # 0 * log(0) where p == 1 and k == 0 is 0, not NaN.
        probs = ember.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        bce = F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs
