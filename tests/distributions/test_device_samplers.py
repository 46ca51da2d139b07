"""The variable-draw Philox samplers (_standard_gamma, poisson, binomial, and the dirichlet/beta
draws over them) on every test device: each device runs its own kernel (no CPU fallback), a seed
gives the same numbers on a device run after run, the generator advances one block per call, the
streams are the CPU's (docs/random.md), and the distributions are right: moments and KS /
chi-square tests against scipy.stats at fixed seeds (deterministic, so they can fail).

Run on the CUDA emulator with ``EMBER_CUDA_EMULATOR=1 EMBER_TEST_DEVICES=cuda``.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import scipy.stats as st
import torch

import ember
import ember.distributions as ed
from ember.dispatcher.devices import REGISTRY

SEED = 2026
N = 20_000
SAMPLERS = ["_standard_gamma", "poisson", "binomial"]
FLOATS = [ember.float16, ember.bfloat16, ember.float32, ember.float64]
PRECISE = [ember.float32, ember.float64]
# devices of the example third-party plugin (examples/ember-backend-example), which ships no
# sampler kernels
THIRD_PARTY = {"ref"}


def draw(device, op, *params, dtype=ember.float64, seed=SEED):
    """``op`` over ``params`` (numpy-like) on ``device`` from a fresh generator, as float64."""
    gen = ember.Generator(device).manual_seed(seed)
    tensors = [ember.tensor(np.asarray(p, np.float64), dtype=dtype, device=device) for p in params]
    return op(*tensors, generator=gen).cpu().double().numpy()


@pytest.mark.parametrize("name", SAMPLERS)
def test_the_device_runs_its_own_kernel(device, name):
    table = REGISTRY.backend(device).kernels.get(name) or {}
    if device in THIRD_PARTY:  # the example plugin has none: the declared CPU fallback runs
        assert not table, f"{name} on {device}: {sorted(table)}"
        return
    assert sorted(table) == sorted(d.name for d in FLOATS), f"{name} on {device}: {sorted(table)}"
    assert all(k.__qualname__.startswith(f"{device}.") for k in table.values())


@pytest.mark.parametrize("name", SAMPLERS)
def test_same_seed_same_numbers_and_one_block_per_call(device, name):
    op = getattr(ember, name)
    params = [ember.full((3000,), 12.0, device=device)]
    if name == "binomial":
        params.append(ember.full((3000,), 0.3, device=device))
    first = op(*params, generator=ember.Generator(device).manual_seed(9)).cpu().numpy()
    gen = ember.Generator(device).manual_seed(9)
    again = op(*params, generator=gen).cpu().numpy()
    then = op(*params, generator=gen).cpu().numpy()
    assert first.tobytes() == again.tobytes()
    assert (again != then).mean() > 0.5  # each call takes its own Philox block
    assert gen.take(0)[1] == 2


# Parameters that walk every branch: the alpha < 1 boost, PTRS and Knuth, BTRS and inversion
# on both sides of 1/2, and the edges (0, NaN, inf, certain outcomes).
GAMMA_ALPHAS = [0.0, 0.05, 0.3, 1.0, 2.5, 30.0, 1e4, math.inf, math.nan]
POISSON_RATES = [0.0, 0.5, 4.0, 9.9, 10.0, 12.0, 300.0, 1e5]
BINOMIAL = [(5, 0.3), (20, 0.7), (30, 0.1), (0, 0.5), (7, 1.0), (7, 0.0), (100, 0.4), (1e3, 0.5),
            (50, 0.95), (2e4, 0.01)]  # fmt: skip


def _cases(name):
    if name == "_standard_gamma":
        return (np.repeat(GAMMA_ALPHAS, 200),)
    if name == "poisson":
        return (np.repeat(POISSON_RATES, 200),)
    count, prob = zip(*BINOMIAL)
    return np.repeat(count, 200), np.repeat(prob, 200)


@pytest.mark.parametrize("dtype", PRECISE, ids=str)
@pytest.mark.parametrize("name", SAMPLERS)
def test_the_streams_are_the_cpus(device, name, dtype):
    # Same words, same algorithm (csrc/samplers.h on every device), same order of draws: the
    # values agree with the CPU's except where the device's own log/exp/pow/cos round differently
    # (and may flip an accept test: the element then takes other draws).
    params = _cases(name)
    got = draw(device, getattr(ember, name), *params, dtype=dtype)
    want = draw("cpu", getattr(ember, name), *params, dtype=dtype)
    close = np.isclose(got, want, rtol=1e-5, atol=0, equal_nan=True)
    assert close.mean() > 0.99, f"{(~close).sum()} of {close.size} differ from the CPU's"
    if device == "cuda" and os.environ.get("EMBER_CUDA_EMULATOR") == "1":  # the host's libm
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", PRECISE, ids=str)
def test_edges_as_pytorch(device, dtype):
    alphas = [0.0, 0.0, math.inf]  # 0 gives the smallest normal: PyTorch's clamp of its 0
    want = torch._standard_gamma(torch.tensor(alphas, dtype=getattr(torch, str(dtype)[6:])))
    np.testing.assert_array_equal(draw(device, ember._standard_gamma, alphas, dtype=dtype), want)
    # NaN for NaN or negative alpha, as PyTorch's CUDA kernel (its CPU one clamps them too)
    assert np.isnan(draw(device, ember._standard_gamma, [math.nan, -1.0], dtype=dtype)).all()
    np.testing.assert_array_equal(draw(device, ember.poisson, [0.0, 0.0]), [0.0, 0.0])
    count, prob = [0.0, 7.0, 7.0, 9.0], [0.5, 1.0, 0.0, math.nan]
    want = torch.binomial(torch.tensor(count), torch.tensor(prob))
    np.testing.assert_array_equal(draw(device, ember.binomial, count, prob), want)


@pytest.mark.parametrize("dtype", PRECISE, ids=str)
@pytest.mark.parametrize("alpha", [0.2, 1.0, 3.7, 150.0])
def test_gamma_ks_and_moments(device, alpha, dtype):
    got = draw(device, ember._standard_gamma, np.full(N, alpha), dtype=dtype)
    assert st.kstest(got, st.gamma(alpha).cdf).pvalue > 1e-3
    _moments(got, st.gamma(alpha))


def _moments(got, dist):
    # Mean within 5 standard errors; variance within 5 of its (approximate) standard errors.
    n = got.size
    assert abs(got.mean() - dist.mean()) < 5 * dist.std() / math.sqrt(n)
    kurt = dist.stats(moments="k") + 3
    assert abs(got.var() - dist.var()) < 5 * dist.var() * math.sqrt((kurt - 1) / n)


def _chi_square(got, dist):
    """Pearson's chi-square over the support, the tails pooled until each bin expects >= 5."""
    lo, hi = int(dist.ppf(1e-4)), int(dist.ppf(1 - 1e-4))
    edges = np.arange(lo, hi + 1)
    expected = np.diff(np.concatenate([[0.0], dist.cdf(edges[:-1]), [1.0]])) * got.size
    observed = np.bincount(np.clip(got.astype(np.int64), lo, hi) - lo, minlength=edges.size)
    bins_o, bins_e, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            acc_o = acc_e = 0.0
    bins_o[-1] += acc_o
    bins_e[-1] += acc_e
    assert st.chisquare(bins_o, bins_e).pvalue > 1e-3


@pytest.mark.parametrize("dtype", PRECISE, ids=str)
@pytest.mark.parametrize("rate", [0.7, 6.0, 10.0, 55.0, 4000.0])
def test_poisson_chi_square_and_moments(device, rate, dtype):
    got = draw(device, ember.poisson, np.full(N, rate), dtype=dtype)
    assert (got == np.round(got)).all() and (got >= 0).all()
    _chi_square(got, st.poisson(rate))
    _moments(got, st.poisson(rate))


@pytest.mark.parametrize("dtype", PRECISE, ids=str)
@pytest.mark.parametrize("count, prob", [(10, 0.2), (50, 0.3), (50, 0.9), (1000, 0.5), (7, 0.95)])
def test_binomial_chi_square_and_moments(device, count, prob, dtype):
    got = draw(device, ember.binomial, np.full(N, count), np.full(N, prob), dtype=dtype)
    assert (got >= 0).all() and (got <= count).all()
    _chi_square(got, st.binom(count, prob))
    _moments(got, st.binom(count, prob))


def test_binomial_broadcasts_count_and_prob_as_pytorch(device):
    count, prob = np.array([[10.0], [40.0], [1000.0]]), np.array([0.1, 0.5, 0.8, 1.0])
    got = draw(device, ember.binomial, count, prob)
    assert got.shape == tuple(torch.binomial(torch.tensor(count), torch.tensor(prob)).shape)
    assert (got >= 0).all() and (got <= count).all() and (got[:, 3] == count[:, 0]).all()
    with pytest.raises(RuntimeError) as theirs:
        torch.binomial(torch.ones(2), torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError, match=str(theirs.value)):
        ember.binomial(
            ember.ones(2, device=device), ember.ones(2, dtype=ember.float64, device=device)
        )


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=str)
def test_half_types_draw_the_float32_stream(device, dtype):
    alpha = np.full(N, 2.0)
    got = draw(device, ember._standard_gamma, alpha, dtype=dtype)
    want = draw(device, ember._standard_gamma, alpha, dtype=ember.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2)


@pytest.mark.parametrize("dtype", PRECISE, ids=str)
def test_beta_and_dirichlet_from_device_gammas(device, dtype):
    ember.manual_seed(11)
    a, b = (
        ember.tensor(2.0, dtype=dtype, device=device),
        ember.tensor(3.5, dtype=dtype, device=device),
    )
    beta = ed.Beta(a, b).sample((N,))
    assert beta.device.type == device
    assert st.kstest(beta.cpu().double().numpy(), st.beta(2.0, 3.5).cdf).pvalue > 1e-3
    conc = ember.tensor([0.5, 2.0, 4.0], dtype=dtype, device=device)
    x = ed.Dirichlet(conc).sample((N,)).cpu().double().numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    for k, alpha in enumerate([0.5, 2.0, 4.0]):
        assert st.kstest(x[:, k], st.beta(alpha, 6.5 - alpha).cdf).pvalue > 1e-3


def test_gamma_rsample_gradient_on_device(device):
    # d x / d alpha of the drawn x, against torch's own _standard_gamma_grad at the same points
    # (a series approximation, to about 1e-3).
    alpha = ember.tensor([0.4, 1.5, 7.0, 60.0], dtype=ember.float64, device=device)
    alpha.requires_grad_(True)
    x = ed.Gamma(alpha, ember.ones_like(alpha)).rsample((50,))
    x.sum().backward()
    xs = torch.tensor(x.detach().cpu().numpy())
    want = torch._standard_gamma_grad(
        torch.tensor([0.4, 1.5, 7.0, 60.0]).double().expand_as(xs), xs
    )
    np.testing.assert_allclose(alpha.grad.cpu().numpy(), want.sum(0).numpy(), rtol=5e-3)
