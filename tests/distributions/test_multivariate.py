"""Multivariate families against torch: gradients, broadcasting, messages, LKJ moments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.distributions as ed

from .cases import COV, COV_FACTOR, COV_TRIL, VECTORS
from .helpers import assert_close, to_numpy

# (name, parameters) for gradient checks of log_prob and entropy in float64.
GRADIENT_CASES = [
    ("MultivariateNormal", {"loc": VECTORS, "covariance_matrix": COV}),
    ("MultivariateNormal", {"loc": VECTORS, "precision_matrix": COV}),
    ("MultivariateNormal", {"loc": VECTORS, "scale_tril": COV_TRIL}),
    (
        "LowRankMultivariateNormal",
        {"loc": VECTORS, "cov_factor": COV_FACTOR, "cov_diag": [0.5, 1.2, 0.8]},
    ),
    ("Wishart", {"df": [3.5, 6.0], "covariance_matrix": COV}),
    ("Wishart", {"df": [4.0], "scale_tril": COV_TRIL}),
]
# Points in each family's support: vectors, or positive-definite matrices for Wishart.
POINTS = {
    "Wishart": [COV, [[1.0, 0.2, 0.0], [0.2, 2.0, 0.3], [0.0, 0.3, 1.5]]],
}


def _both(name, params, requires_grad=False):
    e_params = {
        k: ember.tensor(np.asarray(v), requires_grad=requires_grad) for k, v in params.items()
    }
    t_params = {
        k: torch.tensor(np.asarray(v), requires_grad=requires_grad) for k, v in params.items()
    }
    e = getattr(ed, name)(**e_params)
    t = getattr(torch.distributions, name)(**t_params)
    return (e, e_params), (t, t_params)


@pytest.mark.parametrize("name,params", GRADIENT_CASES, ids=lambda v: str(v)[:40])
def test_log_prob_and_entropy_gradients_match_torch(name, params):
    (e, ep), (t, tp) = _both(name, params, requires_grad=True)
    value = np.asarray(POINTS.get(name, [[0.7, -1.0, 0.2], [0.1, 1.5, 0.4]]))
    (e.log_prob(ember.tensor(value)).sum() + e.entropy().sum()).backward()
    (t.log_prob(torch.tensor(value)).sum() + t.entropy().sum()).backward()
    for key in params:
        # scale_tril's upper entries get gradients too: cholesky_solve's backward is PyTorch's
        # (not masked to the factor's triangle), so ember's gradient is torch's whole.
        assert_close(ep[key].grad, to_numpy(tp[key].grad), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name,params", GRADIENT_CASES, ids=lambda v: str(v)[:40])
def test_covariance_views_match_torch(name, params):
    (e, _), (t, _) = _both(name, params)
    for attr in ("scale_tril", "covariance_matrix", "precision_matrix", "variance", "mean"):
        assert_close(getattr(e, attr), getattr(t, attr), rtol=1e-10, atol=1e-12)


def test_rsample_gradient_is_the_noise():
    # d(loc + L eps)/dL = eps (outer product with ones): rebuild eps from the sample.
    loc = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    tril = ember.tensor([[1.5, 0.0], [0.3, 0.7]], dtype=ember.float64, requires_grad=True)
    x = ed.MultivariateNormal(loc, scale_tril=tril).rsample((3,))
    x.sum().backward()
    eps = np.linalg.solve(to_numpy(tril), (to_numpy(x) - to_numpy(loc)).T).T
    assert_close(loc.grad, np.full(2, 3.0))
    # The full matrix: matmul differentiates the upper zeros of the factor too, as torch.
    assert_close(tril.grad, np.ones((2, 1)) * eps.sum(0))


def test_sample_covariance():
    e = ed.MultivariateNormal(ember.tensor(np.zeros(3)), ember.tensor(np.asarray(COV)))
    x = to_numpy(e.sample((40000,)))
    # Each entry of a sample covariance of n normal draws has sd <= sqrt(2 / n) * max variance.
    assert np.abs(np.cov(x.T) - np.asarray(COV)).max() <= 6 * np.sqrt(2 / 40000) * 2.0


def test_log_prob_broadcasts_sample_and_batch_dims_like_torch():
    # One factor per batch entry, values with extra sample dims and a broadcast batch dim.
    trils = np.stack([np.asarray(COV_TRIL), np.eye(3) * 0.5])
    value = np.random.default_rng(1).standard_normal((4, 1, 3))
    e = ed.MultivariateNormal(ember.tensor(np.zeros(3)), scale_tril=ember.tensor(trils))
    t = torch.distributions.MultivariateNormal(
        torch.zeros(3).double(), scale_tril=torch.tensor(trils)
    )
    assert_close(e.log_prob(ember.tensor(value)), t.log_prob(torch.tensor(value)))


def _error(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda m, lib: m.MultivariateNormal(lib.zeros(2)),
        lambda m, lib: m.MultivariateNormal(lib.zeros(2), lib.eye(2), scale_tril=lib.eye(2)),
        lambda m, lib: m.MultivariateNormal(lib.tensor(0.0), lib.eye(2)),
        lambda m, lib: m.MultivariateNormal(lib.zeros(2), lib.ones(2)),
        lambda m, lib: m.MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2)),
        lambda m, lib: m.MultivariateNormal(lib.zeros(2), precision_matrix=lib.ones(2)),
        lambda m, lib: m.LowRankMultivariateNormal(lib.zeros(2), lib.ones(2), lib.ones(2)),
        lambda m, lib: m.LowRankMultivariateNormal(lib.zeros(2), lib.ones(3, 1), lib.ones(2)),
        lambda m, lib: m.LowRankMultivariateNormal(lib.zeros(2), lib.ones(2, 1), lib.ones(3)),
        lambda m, lib: m.LKJCholesky(1),
        lambda m, lib: m.Wishart(lib.tensor([2.0]), lib.eye(3)),
        lambda m, lib: m.Wishart(2.0, lib.ones(3)),
    ],
)
def test_constructor_errors_match_torch(build):
    expected = _error(lambda: build(torch.distributions, torch))
    assert _error(lambda: build(ed, ember)) == expected.replace("torch.", "ember.")


def test_wishart_needs_exactly_one_matrix_like_torch():
    for m, lib in ((ed, ember), (torch.distributions, torch)):
        with pytest.raises(AssertionError, match="Exactly one of covariance_matrix"):
            m.Wishart(4.0, lib.eye(2), scale_tril=lib.eye(2))
        with pytest.warns(UserWarning, match="Low df values detected"):
            m.Wishart(2.5, lib.eye(3))


def test_invalid_covariance_message_matches_torch():
    cov = [[1.0, 2.0], [2.0, 1.0]]  # symmetric, not positive definite
    expected = _error(
        lambda: torch.distributions.MultivariateNormal(
            torch.zeros(2), torch.tensor(cov), validate_args=True
        )
    )
    actual = _error(
        lambda: ed.MultivariateNormal(ember.zeros(2), ember.tensor(cov), validate_args=True)
    )
    assert actual.replace("torch.", "ember.") == expected.replace("torch.", "ember.")


def test_kl_event_shape_mismatch_message_matches_torch():
    tp = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
    tq = torch.distributions.MultivariateNormal(torch.zeros(3), torch.eye(3))
    ep = ed.MultivariateNormal(ember.zeros(2), ember.eye(2))
    eq = ed.MultivariateNormal(ember.zeros(3), ember.eye(3))
    expected = _error(lambda: torch.distributions.kl_divergence(tp, tq))
    assert _error(lambda: ed.kl_divergence(ep, eq)) == expected


@pytest.mark.parametrize("concentration", [0.5, 1.0, 3.0])
def test_lkj_sample_moments_follow_torchs_onion_construction(concentration):
    # torch (and so ember) builds row i >= 1 as sqrt(y_i) * u_i with y_i ~ Beta(o_i + 1/2,
    # eta + (d - 2) / 2 - o_i / 2), o = [0, 0, 1, ..., d - 2], u_i uniform on the unit sphere of
    # its i off-diagonal entries: corr[i, 0] = L[i, 0] has mean 0 and variance E[y_i] / i. (For
    # rows i >= 2 this is not the textbook LKJ marginal Beta(eta - 1 + d / 2) of the correlation;
    # torch's samples show the same, measured, so ember keeps torch's sampler.)
    d, n = 4, 20000
    factors = to_numpy(ed.LKJCholesky(d, concentration).sample((n,)))
    corr = factors @ np.swapaxes(factors, -1, -2)
    assert_close(np.diagonal(corr, axis1=-2, axis2=-1), np.ones((n, d)), rtol=1e-5, atol=1e-5)
    offset = np.concatenate([[0.0], np.arange(d - 1.0)])
    a, b = offset + 0.5, concentration + 0.5 * (d - 2) - 0.5 * offset
    i = np.arange(1, d)
    var = (a / (a + b))[1:] / i
    first_column = corr[:, 1:, 0]
    assert np.all(np.abs(first_column.mean(0)) <= 6 * np.sqrt(var / n))
    # r^2 <= 1 bounds the variance of r^2 by E[r^2] = var.
    assert np.all(np.abs((first_column**2).mean(0) - var) <= 6 * np.sqrt(var / n))
