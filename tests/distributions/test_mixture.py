"""MixtureSameFamily against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.distributions as ed

from .helpers import assert_close

WEIGHTS = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
LOC = np.array([[-1.0, 0.0, 2.0], [0.5, 1.0, -2.0]])
SCALE = np.array([[0.5, 1.0, 0.7], [1.2, 0.3, 0.9]])


def _mixtures(device="cpu"):
    e = ed.MixtureSameFamily(
        ed.Categorical(probs=ember.tensor(WEIGHTS, device=device)),
        ed.Normal(ember.tensor(LOC, device=device), ember.tensor(SCALE, device=device)),
    )
    t = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(probs=torch.tensor(WEIGHTS)),
        torch.distributions.Normal(torch.tensor(LOC), torch.tensor(SCALE)),
    )
    return e, t


def test_mixture_matches_torch(device):
    e, t = _mixtures(device)
    v = np.array([[0.3, -0.4], [1.5, 2.0], [-1.0, 0.0]])
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert_close(e.log_prob(ember.tensor(v, device=device)), t.log_prob(torch.tensor(v)))
    assert_close(e.cdf(ember.tensor(v, device=device)), t.cdf(torch.tensor(v)))
    assert_close(e.mean, t.mean)
    assert_close(e.variance, t.variance)
    assert tuple(e.sample((4,)).shape) == tuple(t.sample((4,)).shape)


def test_mixture_sample_moments():
    e, t = _mixtures()
    n = 40000
    samples = e.sample((n,)).numpy()
    bound = 6 * t.stddev.numpy() / np.sqrt(n)
    assert np.all(np.abs(samples.mean(0) - t.mean.numpy()) <= bound)
    e2 = e.expand((4, 2))
    assert tuple(e2.sample().shape) == (4, 2)


def test_mixture_checks_its_arguments():
    normal = ed.Normal(ember.zeros(3), ember.ones(3))
    with pytest.raises(ValueError, match="needs to be an  instance of"):
        ed.MixtureSameFamily(normal, normal)
    with pytest.raises(ValueError, match=r"does not equal `component_distribution\.batch_shape"):
        ed.MixtureSameFamily(ed.Categorical(probs=ember.ones(2)), normal)
