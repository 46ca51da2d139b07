"""Standard gamma sampling (Marsaglia and Tsang, 2000), vectorised over ember ops.

Every element draws a normal and a uniform per round and keeps its first accepted proposal;
acceptance is above 95% per round for every shape, so the rounds stop after a handful. This runs on
ember's generator on every device; the issue asks for Philox kernels per device later, which
should replace this module (and so give torch-like speed for large batches).
"""

from __future__ import annotations

import ember

from .utils import tiny

_MAX_ROUNDS = 64  # P(some element still rejected) < 0.05**64 per element


def standard_gamma(alpha):
    """Samples of Gamma(alpha, 1), shaped like ``alpha``; no gradient."""
    with ember.no_grad():
        alpha = alpha.detach()
        shape, options = tuple(alpha.shape), {"dtype": alpha.dtype, "device": alpha.device}
        boost = alpha < 1
        # For alpha < 1 sample Gamma(alpha + 1) and multiply by U ** (1 / alpha).
        a = ember.where(boost, alpha + 1, alpha)
        d = a - 1.0 / 3.0
        c = 1.0 / ember.sqrt(9.0 * d)
        out = ember.zeros(shape, **options)
        done = ember.zeros(shape, dtype=ember.bool, device=alpha.device)
        for _ in range(_MAX_ROUNDS):
            z = ember.randn(shape, **options)
            v = (1 + c * z) ** 3
            u = ember.rand(shape, **options)
            log_v = ember.log(v.clamp(min=tiny(alpha.dtype)))
            accept = (v > 0) & (ember.log(u) < 0.5 * z * z + d - d * v + d * log_v)
            out = ember.where(accept & ~done, d * v, out)
            done = done | accept
            if bool(done.all()):
                break
        u = ember.rand(shape, **options)
        out = ember.where(boost, out * u.pow(1.0 / alpha), out)
        return out.clamp(min=tiny(alpha.dtype))
