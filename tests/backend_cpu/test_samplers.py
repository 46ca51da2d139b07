"""The variable-draw Philox samplers (_standard_gamma, poisson, binomial; docs/random.md).

A Python transcription of the contract (word streams per element, PyTorch's algorithms) is
compared with the C kernels bit for bit in float64; the distributions are checked against scipy's
exact ones with fixed seeds, so the tests are deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
import torch
from test_random import spec_philox

import ember
import ember.distributions as ed

SEED = (5 << 32) | 424242


class SpecStream:
    """Element i's words: Philox of counters (block, i, k) for k = 1, 2, ..."""

    def __init__(self, seed: int, block: int, i: int):
        self.key = (seed & 0xFFFFFFFF, seed >> 32)
        self.counter = (block & 0xFFFFFFFF, block >> 32, i)
        self.k = 0
        self.words: list[int] = []

    def next32(self) -> int:
        if not self.words:
            self.k += 1
            ctr = [np.array([c], np.uint64) for c in (*self.counter, self.k)]
            self.words = [int(w[0]) for w in spec_philox(ctr, *self.key)]
        return self.words.pop(0)

    def uniform(self) -> float:
        w = self.next32() | (self.next32() << 32)
        return (w >> 11) * 2.0**-53

    def normal(self) -> float:
        u1 = self.uniform() + 2.0**-53
        u2 = self.uniform()
        return math.sqrt(-2 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def spec_gamma(alpha: float, s: SpecStream) -> float:
    scale = 1.0
    if alpha < 1:
        scale = (1 - s.uniform()) ** (1 / alpha)
        alpha += 1
    d = alpha - 1 / 3
    c = 1 / math.sqrt(9 * d)
    while True:
        x = s.normal()
        y = 1 + c * x
        while y <= 0:
            x = s.normal()
            y = 1 + c * x
        v = y * y * y
        u = 1 - s.uniform()
        xsq = x * x
        if u < 1 - 0.0331 * xsq * xsq or math.log(u) < 0.5 * xsq + d * (1 - v + math.log(v)):
            return max(scale * d * v, 2.0**-1022)


def spec_poisson(lam: float, s: SpecStream) -> float:
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = s.uniform() - 0.5
            v = s.uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            lhs = math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b)
            if lhs <= -lam + k * loglam - math.lgamma(k + 1):
                return k
    enlam, prod, x = math.exp(-lam), 1.0, 0
    while True:
        prod *= s.uniform()
        if not prod > enlam:
            return x
        x += 1


def spec_binomial_inversion(count: float, prob: float, s: SpecStream) -> float:
    logprob, total, hits = math.log1p(-prob), 0.0, 0
    while True:
        u = s.uniform()
        total += math.ceil(math.log(u) / logprob) if u > 0 else math.inf
        if total > count:
            return hits
        hits += 1


def run(op, *params, dtype=ember.float64, seed=SEED):
    gen = ember.Generator().manual_seed(seed)
    block = gen.take(0)[1]
    tensors = [ember.tensor(np.asarray(p, np.float64)).to(dtype) for p in params]
    out = op(*tensors, generator=gen)
    return out.numpy().astype(np.float64), block


def test_gamma_matches_spec():
    alphas = [0.05, 0.3, 1.0, 2.5, 30.0, 1e4]
    got, block = run(ember._standard_gamma, alphas)
    want = [spec_gamma(a, SpecStream(SEED, block, i)) for i, a in enumerate(alphas)]
    np.testing.assert_array_equal(got, want)


def test_poisson_matches_spec():
    rates = [0.0, 0.5, 4.0, 9.9, 12.0, 300.0, 1e5]
    got, block = run(ember.poisson, rates)
    want = [spec_poisson(r, SpecStream(SEED, block, i)) for i, r in enumerate(rates)]
    np.testing.assert_array_equal(got, want)


def test_binomial_inversion_matches_spec():
    counts, probs = [5.0, 20.0, 30.0, 0.0, 7.0], [0.3, 0.7, 0.1, 0.5, 1.0]
    got, block = run(ember.binomial, counts, probs)
    want = []
    for i, (n, p) in enumerate(zip(counts, probs)):
        s = SpecStream(SEED, block, i)
        if n == 0 or p >= 1:
            want.append(n if p >= 1 else 0.0)
        elif p <= 0.5:
            want.append(spec_binomial_inversion(n, p, s))
        else:
            want.append(n - spec_binomial_inversion(n, 1 - p, s))
    np.testing.assert_array_equal(got, want)


N = 20_000


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("alpha", [0.2, 1.0, 3.7, 150.0])
def test_gamma_ks(dtype, alpha):
    got, _ = run(ember._standard_gamma, np.full(N, alpha), dtype=dtype)
    assert st.kstest(got, st.gamma(alpha).cdf).pvalue > 1e-3


def _discrete_close(got, dist):
    # The empirical CDF against the exact one on the support (a discrete KS distance).
    support = np.arange(got.min(), got.max() + 1)
    ecdf = np.searchsorted(np.sort(got), support, side="right") / got.size
    assert np.abs(ecdf - dist.cdf(support)).max() < 1.63 / math.sqrt(got.size)  # KS at 1%
    assert abs(got.mean() - dist.mean()) < 5 * dist.std() / math.sqrt(got.size)


@pytest.mark.parametrize("rate", [0.7, 6.0, 10.0, 55.0, 4000.0])
def test_poisson_distribution(rate):
    got, _ = run(ember.poisson, np.full(N, rate), dtype=ember.float32)
    _discrete_close(got, st.poisson(rate))


@pytest.mark.parametrize("count, prob", [(10, 0.2), (50, 0.3), (50, 0.9), (1000, 0.5), (7, 0.95)])
def test_binomial_distribution(count, prob):
    got, _ = run(ember.binomial, np.full(N, count), np.full(N, prob), dtype=ember.float32)
    _discrete_close(got, st.binom(count, prob))


def test_beta_and_dirichlet_from_gammas():
    ember.manual_seed(11)
    beta = ed.Beta(ember.tensor(2.0), ember.tensor(3.5)).sample((N,)).numpy()
    assert st.kstest(beta, st.beta(2.0, 3.5).cdf).pvalue > 1e-3
    conc = ember.tensor([0.5, 2.0, 4.0])
    x = ed.Dirichlet(conc).sample((N,)).numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    assert st.kstest(x[:, 0], st.beta(0.5, 6.0).cdf).pvalue > 1e-3


@pytest.mark.parametrize("op", [ember._standard_gamma, ember.poisson])
def test_seeded_reproducible_and_advancing(op):
    params = ember.full((1000,), 3.0)
    a = op(params, generator=ember.Generator().manual_seed(1))
    gen = ember.Generator().manual_seed(1)
    b = op(params, generator=gen)
    c = op(params, generator=gen)
    assert (a == b).all()
    assert not (b == c).all()  # each call takes its own Philox block
    assert gen.take(0)[1] == 2


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
def test_half_types_compute_in_float(dtype):
    alpha = np.full(N, 2.0)
    got, _ = run(ember._standard_gamma, alpha, dtype=dtype)
    want, _ = run(ember._standard_gamma, alpha, dtype=ember.float32)
    np.testing.assert_allclose(got, want, rtol=1e-2)


@pytest.mark.parametrize("rate", [-1.0, float("nan")])
def test_a_negative_or_nan_poisson_rate_is_refused_as_pytorch_refuses_it(rate):
    with pytest.raises(RuntimeError) as theirs:
        torch.poisson(torch.tensor([2.0, rate]))
    with pytest.raises(RuntimeError, match=str(theirs.value)):
        ember.poisson(ember.tensor([2.0, rate]))
