"""Standard gamma sampling: the Philox kernel ``ember._standard_gamma`` (Marsaglia and Tsang,
2000, as PyTorch's sample_gamma; docs/random.md), on every device that has it."""

from __future__ import annotations

import ember


def standard_gamma(alpha):
    """Samples of Gamma(alpha, 1), shaped like ``alpha``; no gradient."""
    with ember.no_grad():
        return ember._standard_gamma(alpha.detach())
