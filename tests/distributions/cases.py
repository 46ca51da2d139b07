"""Distribution records shared by the tests: constructor parameters and points to evaluate.

Each record builds the same distribution in ember and in torch (the oracle) from float64 arrays;
``values`` lie in the support, ``probs`` in (0, 1) for ``icdf``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LOC = [0.3, -1.2, 2.0]
SCALE = [0.5, 1.3, 2.0]
POS = [0.7, 1.5, 3.0]
PROBS = [0.2, 0.5, 0.9]
REALS = [-0.4, 0.1, 1.7]
SIMPLEX = [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]
# A positive-definite 3x3 matrix, its lower Cholesky factor and a rank-2 covariance factor.
COV = [[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]]
COV_TRIL = [[1.2, 0.0, 0.0], [0.4, 0.9, 0.0], [-0.3, 0.2, 0.7]]
COV_FACTOR = [[0.5, -0.2], [1.0, 0.3], [-0.4, 0.8]]
VECTORS = [[0.1, -0.3, 0.5], [1.0, 2.0, -0.7]]
CORR_TRIL = [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]]  # rows of unit norm


@dataclass
class Case:
    name: str
    params: dict
    values: list
    probs: list = field(default_factory=lambda: [0.1, 0.5, 0.8])
    id: str = ""
    # Sample moments converge too slowly to check (infinite or huge higher moments).
    heavy_tailed: bool = False
    # Methods torch has and ember does not yet, with the reason; tests expect NotImplementedError.
    ember_lacks: dict = field(default_factory=dict)
    # torch has no closed-form mean (relaxed and logistic-normal families): no moment check.
    moments: bool = True
    # Tolerance of entropy where torch rounds through float32.
    entropy_rtol: float = 1e-9

    def __post_init__(self):
        self.id = self.id or self.name


CASES = [
    Case("Normal", {"loc": LOC, "scale": SCALE}, REALS),
    Case("Normal", {"loc": 0.5, "scale": 2.0}, REALS, id="Normal-scalar"),
    Case("Uniform", {"low": [-1.0, -2.0, 0.0], "high": [1.0, 3.0, 2.0]}, [0.2, -1.5, 1.9]),
    Case("Exponential", {"rate": POS}, [0.1, 1.0, 2.5]),
    Case("Laplace", {"loc": LOC, "scale": SCALE}, REALS),
    Case("Cauchy", {"loc": LOC, "scale": SCALE}, REALS, heavy_tailed=True),
    Case("LogNormal", {"loc": LOC, "scale": SCALE}, POS, heavy_tailed=True),
    Case("LogNormal", {"loc": LOC, "scale": [0.2, 0.4, 0.3]}, POS, id="LogNormal-narrow"),
    Case("Gumbel", {"loc": LOC, "scale": SCALE}, REALS),
    Case("HalfNormal", {"scale": SCALE}, POS),
    Case("HalfCauchy", {"scale": SCALE}, POS, heavy_tailed=True),
    Case("Bernoulli", {"probs": PROBS}, [1.0, 0.0, 1.0]),
    Case("Bernoulli", {"logits": REALS}, [0.0, 1.0, 1.0], id="Bernoulli-logits"),
    Case("Geometric", {"probs": PROBS}, [0.0, 3.0, 1.0]),
    Case("Categorical", {"probs": SIMPLEX}, [2, 0]),
    Case("Categorical", {"logits": [[0.1, -2.0, 1.0]]}, [[1], [2]], id="Categorical-logits"),
    Case("Gamma", {"concentration": [0.3, 1.0, 4.5], "rate": [1.0, 2.0, 0.5]}, POS),
    Case("Chi2", {"df": [0.8, 2.0, 5.0]}, POS),
    Case("Beta", {"concentration1": POS, "concentration0": SCALE}, PROBS),
    Case(
        "Dirichlet",
        {"concentration": [[0.5, 1.0, 2.0], [3.0, 0.7, 1.2]]},
        SIMPLEX,
    ),
    Case("Pareto", {"scale": SCALE, "alpha": [6.0, 8.0, 10.0]}, [0.6, 1.5, 2.5]),
    Case("Weibull", {"scale": SCALE, "concentration": [0.8, 1.5, 3.0]}, POS),
    Case("Kumaraswamy", {"concentration1": POS, "concentration0": SCALE}, PROBS),
    Case("LogisticNormal", {"loc": LOC, "scale": SCALE}, [[0.1, 0.2, 0.3, 0.4]], moments=False),
    Case(
        "RelaxedBernoulli",
        {"temperature": [0.5], "probs": PROBS},
        [0.3, 0.6, 0.9],
        moments=False,
    ),
    Case(
        "RelaxedOneHotCategorical",
        {"temperature": [0.7], "probs": SIMPLEX},
        [[0.1, 0.3, 0.6], [0.5, 0.2, 0.3]],
        moments=False,
    ),
    Case("Poisson", {"rate": [0.5, 3.0, 25.0]}, [0.0, 2.0, 30.0]),
    Case("Binomial", {"total_count": [5.0, 10.0, 20.0], "probs": PROBS}, [1.0, 5.0, 18.0]),
    Case(
        "Binomial",
        {"total_count": [8.0, 8.0], "logits": [0.3, -1.0]},
        [3.0, 8.0],
        id="Binomial-logits",
    ),
    Case(
        "NegativeBinomial",
        {"total_count": [3.0, 5.0, 0.5], "probs": [0.3, 0.55, 0.2]},
        [0.0, 4.0, 2.0],
    ),
    Case(
        "Multinomial",
        {"total_count": 10, "probs": SIMPLEX},
        [[2.0, 3.0, 5.0], [6.0, 3.0, 1.0]],
        entropy_rtol=1e-6,  # torch takes lgamma(total_count + 1) in float32
    ),
    Case(
        "StudentT",
        {"df": [0.8, 1.5, 6.0], "loc": LOC, "scale": SCALE},
        REALS,
        heavy_tailed=True,
    ),
    Case(
        "StudentT",
        {"df": [9.0, 12.0, 20.0], "loc": LOC, "scale": SCALE},
        REALS,
        id="StudentT-light",
    ),
    Case(
        "InverseGamma",
        {"concentration": [5.0, 6.0, 9.0], "rate": POS},
        POS,
    ),
    Case(
        "FisherSnedecor",
        {"df1": [3.0, 5.0, 10.0], "df2": [12.0, 15.0, 20.0]},
        POS,
    ),
    Case("ContinuousBernoulli", {"probs": [0.2, 0.4995, 0.9]}, [0.1, 0.5, 0.95]),
    Case(
        "ContinuousBernoulli", {"logits": REALS}, [0.1, 0.5, 0.95], id="ContinuousBernoulli-logits"
    ),
    # Circular: sample moments are circular too, so no linear moment check.
    Case("VonMises", {"loc": LOC, "concentration": POS}, REALS, moments=False),
    Case("OneHotCategorical", {"probs": SIMPLEX}, [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    Case("MultivariateNormal", {"loc": VECTORS, "covariance_matrix": COV}, VECTORS),
    Case(
        "MultivariateNormal",
        {"loc": VECTORS, "precision_matrix": COV},
        VECTORS,
        id="MultivariateNormal-precision",
    ),
    Case(
        "MultivariateNormal",
        {"loc": [0.3, -0.2, 1.0], "scale_tril": [COV_TRIL, COV_TRIL]},
        VECTORS,
        id="MultivariateNormal-scale_tril",
    ),
    Case(
        "LKJCholesky",
        {"dim": 3, "concentration": [0.5, 2.0]},
        [CORR_TRIL, [[1.0, 0.0, 0.0], [-0.28, 0.96, 0.0], [0.48, 0.6, 0.64]]],
        moments=False,  # torch has no mean: moments are checked in test_multivariate
    ),
    Case(
        "Wishart",
        {"df": [3.5, 6.0], "covariance_matrix": COV},
        [COV, [[1.0, 0.2, 0.0], [0.2, 2.0, 0.3], [0.0, 0.3, 1.5]]],
    ),
    Case(
        "LowRankMultivariateNormal",
        {"loc": VECTORS, "cov_factor": COV_FACTOR, "cov_diag": [0.5, 1.2, 0.8]},
        VECTORS,
    ),
]


def as_array(value):
    return np.asarray(value, dtype=np.int64 if _is_index(value) else np.float64)


def _is_index(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, int) or (isinstance(v, list) and all(isinstance(w, int) for w in v))
        for v in value
    )
