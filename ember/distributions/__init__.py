"""Probability distributions and sampling, as ``torch.distributions``.

Parameterizable distributions with PyTorch's API: ``sample``/``rsample``, ``log_prob``, ``entropy``,
``mean``/``variance``, ``cdf``/``icdf``, argument validation against ``constraints``, bijective
``transforms`` and a ``kl_divergence`` registry.
"""

# _kl_pairs* register the closed-form KL divergences with the registry in kl.
from . import _kl_pairs, _kl_pairs_gamma, _kl_pairs_mvn, constraints, transforms
from .bernoulli import Bernoulli
from .binomial import Binomial, Multinomial
from .categorical import Categorical
from .cauchy import Cauchy
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Beta, Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Chi2, Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfCauchy, HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Kumaraswamy, Pareto, Weibull
from .poisson import Poisson
from .relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .student_t import StudentT
from .transformed_distribution import TransformedDistribution

# torch.distributions exports every transform at its top level too.
from .transforms import *  # noqa: F403
from .uniform import Uniform
from .von_mises import VonMises
from .wishart import Wishart

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "ExponentialFamily",
    "Exponential",
    "ExpRelaxedCategorical",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "Laplace",
    "LKJCholesky",
    "LogitRelaxedBernoulli",
    "LogisticNormal",
    "LogNormal",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]
__all__ += transforms.__all__

# torch.distributions has one module per family (``from torch.distributions.beta import Beta``);
# ember keeps related families together, so those module names are aliases of where each lives.
_MODULE_ALIASES = {
    "beta": ["Beta"],
    "chi2": ["Chi2"],
    "half_cauchy": ["HalfCauchy"],
    "kumaraswamy": ["Kumaraswamy"],
    "multinomial": ["Multinomial"],
    "relaxed_bernoulli": ["LogitRelaxedBernoulli", "RelaxedBernoulli"],
    "relaxed_categorical": ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
    "studentT": ["StudentT"],
    "weibull": ["Weibull"],
}


def _alias_modules() -> None:
    import sys
    import types

    for name, classes in _MODULE_ALIASES.items():
        module = types.ModuleType(f"{__name__}.{name}", f"torch.distributions.{name}'s names.")
        module.__all__ = classes
        module.__dict__.update({cls: globals()[cls] for cls in classes})
        sys.modules[module.__name__] = module
        globals()[name] = module


_alias_modules()
