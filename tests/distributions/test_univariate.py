"""Distributions against torch.distributions: densities, moments, cdf/icdf, sampling, gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .cases import CASES, as_array
from .helpers import assert_close, build, to_numpy, torch_or_error

IDS = [c.id for c in CASES]


def _values(case, device):
    array = as_array(case.values)
    return ember.tensor(array, device=device), torch.tensor(array)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_prob_entropy_moments(case, device):
    e, t, _ = build(case, device)
    ev, tv = _values(case, device)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    assert_close(e.log_prob(ev), t.log_prob(tv))
    for name in ("mean", "variance", "stddev", "mode"):
        expected = torch_or_error(lambda name=name: getattr(t, name))
        if expected is NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(e, name)
        else:
            assert_close(getattr(e, name), expected)
    expected = torch_or_error(t.entropy)
    if expected is NotImplementedError:
        with pytest.raises(NotImplementedError):
            e.entropy()
    else:
        assert_close(e.entropy(), expected, rtol=case.entropy_rtol)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_cdf_icdf(case, device):
    e, t, _ = build(case, device)
    ev, tv = _values(case, device)
    if "cdf" in case.ember_lacks:
        with pytest.raises(NotImplementedError):
            e.cdf(ev)
        return
    expected = torch_or_error(lambda: t.cdf(tv))
    if expected is NotImplementedError:
        with pytest.raises(NotImplementedError):
            e.cdf(ev)
        return
    assert_close(e.cdf(ev), expected)
    p = np.asarray(case.probs, dtype=np.float64)
    expected = torch_or_error(lambda: t.icdf(torch.tensor(p)))
    if expected is NotImplementedError:  # Gamma's family: a cdf, no icdf
        with pytest.raises(NotImplementedError):
            e.icdf(ember.tensor(p, device=device))
        return
    assert_close(e.icdf(ember.tensor(p, device=device)), expected, rtol=1e-8)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_shape_dtype_and_support(case, device):
    e, t, params = build(case, device)
    # Python-number parameters make CPU tensors, as in torch.
    expected_device = device if params and not isinstance(case.params.get("loc"), float) else "cpu"
    for shape in [(), (4,), (2, 3)]:
        sample = e.sample(shape)
        expected = t.sample(shape)
        assert tuple(sample.shape) == tuple(expected.shape)
        assert str(sample.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        assert sample.device.type == expected_device
    assert bool(e.support.check(e.sample((50,))).all())
    assert e.has_rsample == (t.has_rsample and "rsample" not in case.ember_lacks)


# Moment checks: the seed is fixed per test, and the bound is 6 standard errors of the mean, so
# a failure means a wrong sampler, not bad luck (6 sigma: about 1e-9 per draw).
FINITE_VARIANCE = [c for c in CASES if c.moments and not c.heavy_tailed and c.name != "Categorical"]


@pytest.mark.parametrize("case", FINITE_VARIANCE, ids=[c.id for c in FINITE_VARIANCE])
def test_sample_moments(case):
    e, t, _ = build(case)
    n = 40000
    samples = to_numpy(e.sample((n,)))
    mean, std = to_numpy(t.mean), to_numpy(t.stddev)
    bound = 6 * std / np.sqrt(n) + 1e-12
    assert np.all(np.abs(samples.mean(0) - mean) <= bound), (samples.mean(0), mean, bound)
    # The sample variance of n draws: bound its relative error loosely (fourth moments vary).
    assert np.all(np.abs(samples.std(0) - std) <= 0.1 * std + 1e-12)


def test_categorical_sample_frequencies():
    probs = np.array([0.2, 0.3, 0.5])
    e = ember.distributions.Categorical(probs=ember.tensor(probs))
    n = 40000
    counts = np.bincount(to_numpy(e.sample((n,))), minlength=3) / n
    assert np.all(np.abs(counts - probs) <= 6 * np.sqrt(probs * (1 - probs) / n))


@pytest.mark.parametrize("case", [c for c in CASES if c.params and c.id == c.name], ids=str)
def test_rsample_gradients_flow(case):
    e, t, params = build(case, requires_grad=True)
    if not t.has_rsample or "rsample" in case.ember_lacks:
        with pytest.raises(NotImplementedError):
            e.rsample()
        return
    e.rsample((5,)).sum().backward()
    for name, param in params.items():
        assert param.grad is not None, name
        assert np.all(np.isfinite(to_numpy(param.grad))), name


def test_normal_rsample_gradient_is_the_noise():
    # d(loc + eps * scale)/d scale = eps: reconstruct eps from the sample and compare.
    loc = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([2.0, 0.5], dtype=ember.float64, requires_grad=True)
    x = ember.distributions.Normal(loc, scale).rsample((3,))
    x.sum().backward()
    eps = (to_numpy(x) - to_numpy(loc)) / to_numpy(scale)
    assert_close(loc.grad, np.full(2, 3.0))
    assert_close(scale.grad, eps.sum(0))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_expand(case):
    e, t, _ = build(case)
    shape = (2,) + tuple(t.batch_shape) if t.batch_shape else (3,)
    e2, t2 = e.expand(shape), t.expand(shape)
    assert tuple(e2.batch_shape) == tuple(t2.batch_shape)
    assert type(e2) is type(e)
    ev, tv = _values(case, "cpu")
    assert_close(e2.log_prob(ev), t2.log_prob(tv))
    assert tuple(e2.sample().shape) == tuple(t2.sample().shape)


def test_von_mises_circular_moments():
    # E[cos(X - loc)] = I1(k) / I0(k) = 1 - circular variance; E[sin(X - loc)] = 0.
    loc, conc = np.array([0.3, -2.5, 3.0]), np.array([0.7, 1.5, 8.0])
    e = ember.distributions.VonMises(ember.tensor(loc), ember.tensor(conc))
    n = 40000
    x = to_numpy(e.sample((n,)))
    assert np.all(np.abs(x) <= np.pi)
    bound = 6 / np.sqrt(n)  # |cos|, |sin| <= 1 bound the standard deviations
    assert np.all(np.abs(np.cos(x - loc).mean(0) - (1 - to_numpy(e.variance))) <= bound)
    assert np.all(np.abs(np.sin(x - loc).mean(0)) <= bound)
