"""Probability distributions and sampling, as ``torch.distributions``.

Parameterizable distributions with PyTorch's API: ``sample``/``rsample``, ``log_prob``, ``entropy``,
``mean``/``variance``, ``cdf``/``icdf``, argument validation against ``constraints``, bijective
``transforms`` and a ``kl_divergence`` registry.
"""

from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical
from .cauchy import Cauchy
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .laplace import Laplace
from .normal import Normal
from .uniform import Uniform

__all__ = [
    "Bernoulli",
    "Categorical",
    "Cauchy",
    "Distribution",
    "ExponentialFamily",
    "Exponential",
    "Laplace",
    "Normal",
    "Uniform",
    "constraints",
    "transforms",
]
