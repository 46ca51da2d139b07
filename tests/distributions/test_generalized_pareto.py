"""GeneralizedPareto against torch (float32: torch's log_prob and cdf fail in float64, comparing
with a float32 zero) and against scipy.stats.genpareto in float64."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
import torch

import ember
import ember.distributions as ed

from .helpers import assert_close, to_numpy

# (loc, scale, concentration, values in the support): heavy-tailed, exponential and bounded.
CASES = {
    "heavy": ([0.3, -1.2, 2.0], [0.5, 1.3, 2.0], [0.2, 0.4, 0.1], [0.5, -0.9, 2.4]),
    "exponential": ([0.3, -1.2], [0.5, 1.3], [0.0, 0.0], [0.5, 1.0]),
    "bounded": ([0.3, -1.2, 2.0], [0.5, 1.3, 2.0], [-0.3, -0.5, -1.0], [0.6, -0.5, 3.5]),
}
PROBS = [0.1, 0.5, 0.8]


def _build(case, lib, dtype, requires_grad=False):
    module = ed if lib is ember else torch.distributions
    loc, scale, conc, _ = (lib.tensor(v, dtype=dtype) for v in CASES[case])
    if requires_grad:
        for p in (loc, scale, conc):
            p.requires_grad_()
    return module.GeneralizedPareto(loc, scale, conc), (loc, scale, conc)


@pytest.mark.parametrize("case", CASES)
def test_values_match_torch_float32(case):
    e, _ = _build(case, ember, ember.float32)
    t, _ = _build(case, torch, torch.float32)
    n = len(CASES[case][0])
    ev, tv = ember.tensor(CASES[case][3]), torch.tensor(CASES[case][3])
    ep, tp = ember.tensor(PROBS[:n]), torch.tensor(PROBS[:n])
    for e_out, t_out in [
        (e.log_prob(ev), t.log_prob(tv)),
        (e.cdf(ev), t.cdf(tv)),
        (e.icdf(ep), t.icdf(tp)),
        (e.mean, t.mean),
        (e.variance, t.variance),
        (e.entropy(), t.entropy()),
        (e.mode, t.mode),
        (e.log_survival_function(ev), t.log_survival_function(tv)),
    ]:
        assert str(e_out.dtype) == "ember.float32"
        assert_close(e_out, t_out, rtol=1e-5, atol=1e-6)
    assert_close(e.support.check(ev), t.support.check(tv))


@pytest.mark.parametrize("case", CASES)
def test_values_match_scipy_float64(case):
    loc, scale, conc, values = (np.asarray(v) for v in CASES[case])
    e, _ = _build(case, ember, ember.float64)
    ref = scipy.stats.genpareto(conc, loc=loc, scale=scale)
    probs = np.asarray(PROBS[: len(loc)])
    assert_close(e.log_prob(ember.tensor(values)), ref.logpdf(values))
    assert_close(e.cdf(ember.tensor(values)), ref.cdf(values))
    assert_close(e.icdf(ember.tensor(probs)), ref.ppf(probs))
    assert_close(e.entropy(), ref.entropy())
    finite = conc < 0.5  # scipy's variance is inf where torch's is nan
    assert_close(to_numpy(e.variance)[finite], ref.var()[finite])


@pytest.mark.parametrize("case", CASES)
def test_samples_shape_support_moments_and_gradients(case):
    e, params = _build(case, ember, ember.float64, requires_grad=True)
    t, _ = _build(case, torch, torch.float64)
    for shape in [(), (4,), (2, 3)]:
        assert tuple(e.sample(shape).shape) == tuple(t.sample(shape).shape)
    n = 40000
    x = to_numpy(e.sample((n,)))
    assert np.all(to_numpy(e.support.check(ember.tensor(x))))
    mean, std = to_numpy(e.mean), np.sqrt(to_numpy(e.variance))
    light = np.asarray(CASES[case][2]) < 0.2  # finite fourth moment: the bound is reliable
    bound = 6 * std[light] / np.sqrt(n)
    assert np.all(np.abs(x.mean(0)[light] - mean[light]) <= bound)
    e.rsample((5,)).sum().backward()
    for p in params:
        assert p.grad is not None and np.all(np.isfinite(to_numpy(p.grad)))


def test_expand_and_validation_match_torch():
    e, _ = _build("heavy", ember, ember.float32)
    t, _ = _build("heavy", torch, torch.float32)
    e2, t2 = e.expand((2, 3)), t.expand((2, 3))
    assert tuple(e2.batch_shape) == tuple(t2.batch_shape) == (2, 3)
    assert_close(e2.mean, t2.mean)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        ed.GeneralizedPareto(ember.tensor([0.0]), ember.tensor([-1.0]), ember.tensor([0.1]))
    assert ed.GeneralizedPareto(0.0, 1.0, 0.5).batch_shape == ()
