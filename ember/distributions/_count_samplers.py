"""Poisson and binomial sampling, vectorised over ember ops and ember's generator.

Poisson: Knuth's product of uniforms below rate 10 (a few rounds), Hormann's PTRS transformed
rejection (1993) from 10 up (acceptance about 90% per round). Binomial: a sum of Bernoulli draws
(exact, O(max total_count) memory). These stand in until the per-device Philox kernels the issue
asks for replace this module.
"""

from __future__ import annotations

import ember

from .utils import lgamma

_MAX_ROUNDS = 256


def _knuth(rate, shape, options):
    # Count uniforms until their running product drops below exp(-rate).
    limit = ember.exp(-rate)
    prod = ember.ones(shape, **options)
    count = ember.zeros(shape, **options)
    for _ in range(_MAX_ROUNDS):
        prod = prod * ember.rand(shape, **options)
        going = prod > limit
        if not bool(going.any()):
            break
        count = count + going.to(count.dtype)
    return count


def _ptrs(rate, shape, options):
    lam = rate.clamp(min=10.0)  # the small-rate lanes are discarded by the caller
    slam, loglam = ember.sqrt(lam), ember.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    out = ember.zeros(shape, **options)
    done = ember.zeros(shape, dtype=ember.bool, device=rate.device)
    for _ in range(_MAX_ROUNDS):
        u = ember.rand(shape, **options) - 0.5
        v = ember.rand(shape, **options)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + lam + 0.43).floor()
        quick = (us >= 0.07) & (v <= vr)
        bad = (k < 0) | ((us < 0.013) & (v > us))
        log_ratio = ember.log(v * invalpha / (a / (us * us) + b))
        slow = log_ratio <= -lam + k * loglam - lgamma(k.clamp(min=0) + 1)
        accept = quick | (~bad & slow)
        out = ember.where(accept & ~done, k, out)
        done = done | accept
        if bool(done.all()):
            break
    return out


def poisson(rate):
    """Poisson samples with the given ``rate`` (same shape); no gradient."""
    with ember.no_grad():
        rate = rate.detach()
        shape, options = tuple(rate.shape), {"dtype": rate.dtype, "device": rate.device}
        small = rate < 10
        out = _knuth(rate.clamp(max=10.0), shape, options)
        if not bool(small.all()):
            out = ember.where(small, out, _ptrs(rate, shape, options))
        return out


def binomial(total_count, probs):
    """Binomial samples: the number of successes among ``total_count`` Bernoulli(probs) draws."""
    with ember.no_grad():
        n_max = int(total_count.max()) if total_count.numel() else 0
        if n_max == 0:
            return ember.zeros_like(probs)
        trials = ember.arange(n_max, dtype=probs.dtype, device=probs.device)
        draws = ember.bernoulli(probs.unsqueeze(-1).expand(tuple(probs.shape) + (n_max,)))
        valid = (trials < total_count.unsqueeze(-1)).to(probs.dtype)
        return (draws * valid).sum(-1)
