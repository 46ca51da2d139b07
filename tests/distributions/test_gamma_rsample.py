"""Reparameterized gamma samples: the implicit gradient against scipy and torch; unbiasedness."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as sc
import torch

import ember
import ember.distributions as ed
from ember.distributions._gamma_grad import standard_gamma_grad

from .helpers import assert_close, to_numpy

ALPHAS = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 9.0, 30.0, 200.0, 1000.0])


@pytest.mark.parametrize("quantile", [1e-4, 0.5, 0.9999])
def test_implicit_gradient_matches_scipy_inverse(quantile):
    # dx/dalpha at a fixed quantile u: a central difference of scipy's gammaincinv in alpha.
    x = sc.gammaincinv(ALPHAS, quantile)
    h = 1e-6 * ALPHAS
    expected = (sc.gammaincinv(ALPHAS + h, quantile) - sc.gammaincinv(ALPHAS - h, quantile)) / (
        2 * h
    )
    actual = standard_gamma_grad(ember.tensor(ALPHAS), ember.tensor(x))
    assert_close(actual, expected, rtol=1e-6)
    # torch's approximation is good to about 1e-3.
    assert_close(
        actual, torch._standard_gamma_grad(torch.tensor(ALPHAS), torch.tensor(x)), rtol=2e-3
    )


def test_float32_gradient_stays_float32():
    x = ember.tensor([0.5, 2.0], dtype=ember.float32)
    grad = standard_gamma_grad(ember.tensor([1.0, 3.0], dtype=ember.float32), x)
    assert grad.dtype == ember.float32


@pytest.mark.parametrize("concentration,rate", [(0.4, 1.0), (3.0, 2.0)])
def test_pathwise_gradient_is_unbiased(concentration, rate):
    # E[x] = alpha / beta: the mean of the pathwise gradients estimates d/dalpha = 1 / beta and
    # d/dbeta = -alpha / beta^2. Bounds: 6 standard errors from the per-sample gradients.
    n = 20000
    alpha = ember.tensor([concentration] * n, dtype=ember.float64, requires_grad=True)
    beta = ember.tensor([rate] * n, dtype=ember.float64, requires_grad=True)
    ed.Gamma(alpha, beta).rsample().sum().backward()
    for grad, expected in ((alpha.grad, 1 / rate), (beta.grad, -concentration / rate**2)):
        g = to_numpy(grad)
        assert abs(g.mean() - expected) <= 6 * g.std() / np.sqrt(n)


@pytest.mark.parametrize(
    "name,params",
    [
        ("Gamma", {"concentration": [0.5, 2.0], "rate": [1.5, 0.5]}),
        ("Chi2", {"df": [1.0, 4.0]}),
        ("InverseGamma", {"concentration": [3.0, 5.0], "rate": [1.0, 2.0]}),
        ("StudentT", {"df": [3.0, 8.0]}),
        ("FisherSnedecor", {"df1": [3.0, 6.0], "df2": [5.0, 9.0]}),
        ("Beta", {"concentration1": [0.5, 2.0], "concentration0": [1.5, 3.0]}),
        ("Dirichlet", {"concentration": [[0.5, 2.0, 1.0], [3.0, 0.2, 1.0]]}),
    ],
)
def test_gamma_family_rsample_like_torch(name, params):
    e_params = {
        k: ember.tensor(v, dtype=ember.float64, requires_grad=True) for k, v in params.items()
    }
    dist = getattr(ed, name)(**e_params)
    assert dist.has_rsample == getattr(torch.distributions, name).has_rsample is True
    dist.rsample((50,)).sum().backward()
    for key, value in e_params.items():
        assert value.grad is not None and np.all(np.isfinite(to_numpy(value.grad))), key
    assert dist.sample((3,)).requires_grad is False


def test_dirichlet_pathwise_gradient_is_unbiased():
    # E[x_0] = a_0 / sum(a): d/da_0 = (sum(a) - a_0) / sum(a)^2, d/da_1 = -a_0 / sum(a)^2.
    n, a = 20000, np.array([0.7, 2.0, 1.3])
    conc = ember.tensor(np.tile(a, (n, 1)), requires_grad=True)
    ed.Dirichlet(conc).rsample()[:, 0].sum().backward()
    g = to_numpy(conc.grad)
    total = a.sum()
    expected = np.array([(total - a[0]) / total**2, -a[0] / total**2, -a[0] / total**2])
    assert np.all(np.abs(g.mean(0) - expected) <= 6 * g.std(0) / np.sqrt(n))


def test_wishart_pathwise_df_gradient_is_unbiased():
    # E[W] = df * V: d E[W_00] / d df = V_00, through the Bartlett factor's Chi2 rsample.
    n = 20000
    df = ember.tensor([4.0] * n, dtype=ember.float64, requires_grad=True)
    cov = ember.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=ember.float64)
    ed.Wishart(df, covariance_matrix=cov).rsample()[:, 0, 0].sum().backward()
    g = to_numpy(df.grad)
    assert abs(g.mean() - 2.0) <= 6 * g.std() / np.sqrt(n)


def test_wishart_rsample_carries_gradients():
    df = ember.tensor([4.0], dtype=ember.float64, requires_grad=True)
    tril = ember.tensor([[1.2, 0.0], [0.3, 0.8]], dtype=ember.float64, requires_grad=True)
    ed.Wishart(df, scale_tril=tril).rsample((20,)).sum().backward()
    assert np.all(np.isfinite(to_numpy(df.grad))) and float(df.grad.abs().sum()) > 0
    assert np.all(np.isfinite(to_numpy(tril.grad)))
