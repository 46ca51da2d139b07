"""kl_divergence pairs against torch, and the registry's dispatch rules."""

from __future__ import annotations

import pytest
import torch

import ember
import ember.distributions as ed

from .cases import COV, COV_FACTOR, COV_TRIL, LOC, POS, PROBS, REALS, SCALE, SIMPLEX, VECTORS, Case
from .helpers import assert_close, build

OTHER_LOC = [1.0, 0.4, -0.5]
OTHER_SCALE = [1.1, 0.6, 3.0]

DISTS = {
    "Normal": ({"loc": LOC, "scale": SCALE}, {"loc": OTHER_LOC, "scale": OTHER_SCALE}),
    "Laplace": ({"loc": LOC, "scale": SCALE}, {"loc": OTHER_LOC, "scale": OTHER_SCALE}),
    "Cauchy": ({"loc": LOC, "scale": SCALE}, {"loc": OTHER_LOC, "scale": OTHER_SCALE}),
    "Gumbel": ({"loc": LOC, "scale": SCALE}, {"loc": OTHER_LOC, "scale": OTHER_SCALE}),
    "LogNormal": ({"loc": LOC, "scale": SCALE}, {"loc": OTHER_LOC, "scale": OTHER_SCALE}),
    "HalfNormal": ({"scale": SCALE}, {"scale": OTHER_SCALE}),
    "Exponential": ({"rate": POS}, {"rate": OTHER_SCALE}),
    "Uniform": (
        {"low": [0.5, -1.0, 0.2], "high": [1.0, 1.0, 0.9]},
        {"low": [-1.0, -2.0, 0.1], "high": [2.0, 1.5, 0.8]},
    ),
    "Bernoulli": ({"probs": PROBS}, {"probs": [0.7, 0.0, 0.4]}),
    "Geometric": ({"probs": PROBS}, {"probs": [0.7, 0.3, 0.4]}),
    "Categorical": ({"probs": SIMPLEX}, {"logits": [[0.3, -1.0, 2.0], [0.0, 0.5, 1.0]]}),
    "OneHotCategorical": ({"probs": SIMPLEX}, {"probs": [[0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]}),
    "Gamma": (
        {"concentration": [0.3, 1.0, 4.5], "rate": POS},
        {"concentration": [1.2, 0.5, 2.0], "rate": SCALE},
    ),
    "Beta": (
        {"concentration1": POS, "concentration0": SCALE},
        {"concentration1": SCALE, "concentration0": POS},
    ),
    "Dirichlet": (
        {"concentration": SIMPLEX},
        {"concentration": [[1.0, 2.0, 0.5], [0.3, 3.0, 1.0]]},
    ),
    "Poisson": ({"rate": POS}, {"rate": SCALE}),
    "Pareto": ({"scale": SCALE, "alpha": POS}, {"scale": [0.4, 1.5, 1.0], "alpha": SCALE}),
    "Binomial": (
        {"total_count": [5.0, 10.0, 10.0], "probs": PROBS},
        {"total_count": [5.0, 8.0, 10.0], "probs": [0.4, 0.3, 0.6]},
    ),
    "ContinuousBernoulli": ({"probs": [0.2, 0.4995, 0.9]}, {"probs": [0.6, 0.3, 0.5002]}),
    # p batched over its loc, q over its factor: the pairs broadcast batch shapes as torch does.
    "MultivariateNormal": (
        {"loc": VECTORS, "covariance_matrix": COV},
        {
            "loc": [0.4, 0.1, -1.0],
            "scale_tril": [COV_TRIL, [[0.8, 0.0, 0.0], [-0.5, 1.4, 0.0], [0.2, 0.1, 1.1]]],
        },
    ),
    "LowRankMultivariateNormal": (
        {"loc": VECTORS, "cov_factor": COV_FACTOR, "cov_diag": [0.5, 1.2, 0.8]},
        {
            "loc": [0.4, 0.1, -1.0],
            "cov_factor": [[1.0], [0.2], [-0.5]],
            "cov_diag": [1.0, 0.3, 2.0],
        },
    ),
}
PAIRS = [(name, name) for name in DISTS] + [
    ("Uniform", "Normal"),
    ("Uniform", "Exponential"),
    ("Uniform", "Gumbel"),
    ("Normal", "Gumbel"),
    ("Normal", "Laplace"),
    ("Exponential", "Normal"),
    ("Exponential", "Gumbel"),
    ("Laplace", "Normal"),
    ("MultivariateNormal", "LowRankMultivariateNormal"),
    ("LowRankMultivariateNormal", "MultivariateNormal"),
]


def _pair(p_name, q_name, device):
    p = build(Case(p_name, DISTS[p_name][0], REALS), device)
    q = build(Case(q_name, DISTS[q_name][1], REALS), device)
    return p, q


@pytest.mark.parametrize("p_name,q_name", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_matches_torch(p_name, q_name, device):
    (ep, tp, _), (eq, tq, _) = _pair(p_name, q_name, device)
    assert_close(ed.kl_divergence(ep, eq), torch.distributions.kl_divergence(tp, tq), rtol=1e-8)


def test_kl_of_independent_sums_event_dims():
    (ep, tp, _), (eq, tq, _) = _pair("Normal", "Normal", "cpu")
    expected = torch.distributions.kl_divergence(
        torch.distributions.Independent(tp, 1), torch.distributions.Independent(tq, 1)
    )
    actual = ed.kl_divergence(ed.Independent(ep, 1), ed.Independent(eq, 1))
    assert_close(actual, expected)


def test_kl_exponential_family_bregman_fallback():
    # The closed form wins dispatch; the Bregman form through autograd must agree with it.
    (ep, _, _), (eq, _, _) = _pair("Exponential", "Exponential", "cpu")
    bregman = ed._kl_pairs._kl_expfamily_expfamily(ep, eq)
    assert_close(bregman, ed.kl_divergence(ep, eq), rtol=1e-8)


def test_kl_unregistered_pair_raises_as_torch():
    p = ed.Cauchy(ember.tensor([0.0]), ember.tensor([1.0]))
    q = ed.Categorical(probs=ember.tensor([0.5, 0.5]))
    with pytest.raises(
        NotImplementedError,
        match="No KL\\(p \\|\\| q\\) is implemented for p type Cauchy and q type Categorical",
    ):
        ed.kl_divergence(p, q)


@pytest.fixture
def registry_snapshot():
    """Restore the KL registry after a test that registers its own pairs."""
    saved = dict(ed.kl._KL_REGISTRY)
    yield
    ed.kl._KL_REGISTRY.clear()
    ed.kl._KL_REGISTRY.update(saved)
    ed.kl._KL_MEMOIZE.clear()


def test_register_kl_prefers_most_specific_and_warns_when_ambiguous(registry_snapshot):
    class MyNormal(ed.Normal):
        pass

    class OtherNormal(ed.Normal):
        pass

    p = MyNormal(ember.tensor([0.0]), ember.tensor([1.0]))
    q = OtherNormal(ember.tensor([1.0]), ember.tensor([1.0]))
    # The (Normal, Normal) registration applies to subclasses.
    assert_close(ed.kl_divergence(p, q), ember.tensor([0.5], dtype=ember.float32))

    @ed.register_kl(MyNormal, ed.Normal)
    def _mine(p, q):
        return ember.zeros(1)

    assert_close(ed.kl_divergence(p, q), ember.zeros(1))

    @ed.register_kl(ed.Normal, OtherNormal)
    def _other(p, q):
        return ember.ones(1)

    # (MyNormal, Normal) is most specific from the left, (Normal, OtherNormal) from the right.
    with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence\\(MyNormal, OtherNormal\\)"):
        assert_close(ed.kl_divergence(p, q), ember.zeros(1))


def test_register_kl_refuses_non_distributions():
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        ed.register_kl(int, ed.Normal)
    with pytest.raises(TypeError, match="Expected type_q to be a Distribution subclass"):
        ed.register_kl(ed.Normal, "Normal")
