"""The probs/logits pair of distributions over one success probability (Bernoulli and kin)."""

from __future__ import annotations

from .utils import lazy_property, logits_to_probs, probs_to_logits


class BinaryProbsLogits:
    """Mixin: whichever of ``probs`` and ``logits`` was given, the other is derived on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()
