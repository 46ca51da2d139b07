"""Poisson and binomial sampling: the Philox kernels ``ember.poisson`` (Knuth / PTRS) and
``ember.binomial`` (inversion / BTRS), PyTorch's algorithms (docs/random.md)."""

from __future__ import annotations

import ember


def poisson(rate):
    """Poisson samples with the given ``rate`` (same shape); no gradient."""
    with ember.no_grad():
        return ember.poisson(rate.detach())


def binomial(total_count, probs):
    """Binomial samples: the number of successes among ``total_count`` Bernoulli(probs) draws."""
    with ember.no_grad():
        return ember.binomial(total_count.detach(), probs.detach())
