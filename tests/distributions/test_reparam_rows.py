"""The reparameterization rows against torch: ``_standard_gamma_grad`` and ``_dirichlet_grad``
on the same inputs (torch's are approximations, so to their accuracy), ``_sample_dirichlet``'s
draws by their moments, and Dirichlet/Beta rsample gradients as torch's ``_Dirichlet``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.distributions as ed


def _inputs(seed=0, n=4000):
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.05, 40.0, n)
    total = alpha + rng.uniform(0.05, 40.0, n)
    return rng, alpha, total


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_standard_gamma_grad_matches_torch(dtype):
    rng, alpha, _ = _inputs()
    x = np.maximum(rng.gamma(alpha), 1e-6)
    got = ember._standard_gamma_grad(
        ember.tensor(alpha, dtype=getattr(ember, dtype)),
        ember.tensor(x, dtype=getattr(ember, dtype)),
    )
    want = torch._standard_gamma_grad(
        torch.tensor(alpha, dtype=getattr(torch, dtype)),
        torch.tensor(x, dtype=getattr(torch, dtype)),
    )
    assert str(got.dtype).endswith(dtype)
    # torch's series approximation is good to about 1e-3; ember's is exact to ~1e-9.
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=5e-3, atol=1e-6)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_dirichlet_grad_matches_torch(dtype):
    rng, alpha, total = _inputs(1)
    x = np.clip(rng.beta(alpha, total - alpha), 1e-6, 1 - 1e-6)
    args = (x, alpha, total)
    got = ember._dirichlet_grad(*(ember.tensor(a, dtype=getattr(ember, dtype)) for a in args))
    want = torch._dirichlet_grad(*(torch.tensor(a, dtype=getattr(torch, dtype)) for a in args))
    # The same algorithm (ATen's dirichlet_grad_one), branch for branch.
    rtol = 1e-9 if dtype == "float64" else 2e-3
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=1e-6)


def test_dirichlet_grad_is_the_implicit_gradient():
    # d x / d alpha at a fixed Beta(alpha, beta) quantile, by a central difference of scipy's
    # inverse incomplete beta, divided by 1 - x as ATen's is: to the approximation's accuracy.
    from scipy import special

    alpha, beta = np.array([0.3, 1.5, 4.0, 9.0, 20.0]), np.array([2.0, 0.7, 5.0, 12.0, 3.0])
    for q in (0.05, 0.5, 0.95):
        x = special.betaincinv(alpha, beta, q)
        h = 1e-6 * alpha
        slope = special.betaincinv(alpha + h, beta, q) - special.betaincinv(alpha - h, beta, q)
        want = slope / (2 * h) / (1 - x)
        got = ember._dirichlet_grad(
            ember.tensor(x), ember.tensor(alpha), ember.tensor(alpha + beta)
        )
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-2)


def test_sample_dirichlet_moments():
    ember.manual_seed(0)
    alpha = np.array([0.3, 1.0, 2.5, 6.0])
    n = 40000
    draws = ember._sample_dirichlet(ember.tensor(np.tile(alpha, (n, 1)))).numpy()
    assert draws.shape == (n, 4) and (draws > 0).all()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    a0 = alpha.sum()
    mean, var = alpha / a0, alpha * (a0 - alpha) / (a0 * a0 * (a0 + 1))
    assert np.all(np.abs(draws.mean(0) - mean) <= 5 * np.sqrt(var / n)), (draws.mean(0), mean)
    assert np.all(np.abs(draws.var(0) - var) <= 0.05 * var), (draws.var(0), var)
    # torch's draws from the same parameters agree in distribution (means within 5 sigma)
    torch.manual_seed(0)
    theirs = torch._sample_dirichlet(torch.tensor(np.tile(alpha, (n, 1)))).numpy()
    assert np.all(np.abs(draws.mean(0) - theirs.mean(0)) <= 5 * np.sqrt(2 * var / n))


def test_sample_dirichlet_follows_the_seed():
    ember.manual_seed(3)
    first = ember._sample_dirichlet(ember.ones(5, 3))
    ember.manual_seed(3)
    assert ember.equal(first, ember._sample_dirichlet(ember.ones(5, 3)))


@pytest.mark.parametrize("name", ("Dirichlet", "Beta"))
def test_rsample_gradient_is_torchs_formula(name):
    # torch's _Dirichlet backward on ember's own draws: the gradient ember computes must equal
    # it with torch's _dirichlet_grad in place of ember's.
    ember.manual_seed(1)
    conc = np.array([[0.6, 2.0, 1.3], [4.0, 0.3, 7.0]])
    weights = np.array([1.0, -2.0, 0.5])
    c = ember.tensor(conc, requires_grad=True)
    if name == "Dirichlet":
        x = ed.Dirichlet(c).rsample()
        (x * ember.tensor(weights)).sum().backward()
        grad_out = np.broadcast_to(weights, conc.shape)
        alpha, xs = conc, x.detach().numpy()
    else:
        x = ed.Beta(c[:, 0], c[:, 1]).rsample()
        x.sum().backward()
        alpha = conc[:, :2]
        xs = np.stack([x.detach().numpy(), 1 - x.detach().numpy()], -1)
        grad_out = np.stack([np.ones(2), np.zeros(2)], -1)
    t_alpha = torch.tensor(alpha)
    total = t_alpha.sum(-1, True).expand_as(t_alpha)
    grad = torch._dirichlet_grad(torch.tensor(xs), t_alpha, total)
    g = torch.tensor(grad_out)
    want = (grad * (g - (torch.tensor(xs) * g).sum(-1, True))).numpy()
    got = c.grad.numpy()[:, : alpha.shape[1]]
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
