"""Sample generators for the reparameterization rows (dispatcher/optable/distribution_grads.py):
concentrations on both sides of the algorithms' switches and draws of their distributions, so
that the rows are compared with their references where they are defined."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample

SHAPES = ((6,), (2, 5), ())


def gamma_grad(op, dtype, device, rng):
    for shape in SHAPES:
        alpha = rng.uniform(0.3, 12.0, shape)
        draws = np.maximum(rng.gamma(alpha), 1e-3)
        yield Sample((Arr(alpha.astype(dtype.np)), Arr(draws.astype(dtype.np))))


def dirichlet_grad(op, dtype, device, rng):
    for shape in SHAPES:
        alpha = rng.uniform(0.3, 12.0, shape)
        total = alpha + rng.uniform(0.3, 12.0, shape)
        draws = np.clip(rng.beta(alpha, total - alpha), 1e-3, 1 - 1e-3)
        args = (draws, alpha, total)
        yield Sample(tuple(Arr(np.asarray(a).astype(dtype.np)) for a in args))


GENERATORS = {"gamma_grad": gamma_grad, "dirichlet_grad": dirichlet_grad}
