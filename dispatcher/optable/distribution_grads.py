"""The samplers' reparameterization rows, as PyTorch's: ``_standard_gamma_grad`` (dx/dalpha of a
Gamma(alpha, 1) draw), ``_sample_dirichlet`` (normalized gamma draws) and ``_dirichlet_grad``
(dx/dalpha of a Beta(alpha, total - alpha) draw, the Dirichlet marginal, at fixed beta and
divided by 1 - x: Dirichlet's backward turns it into the simplex gradient).

They are decompositions over existing ops, so every device with those ops has them.
``_standard_gamma_grad`` differentiates the regularized incomplete gamma function numerically
(see ``_standard_gamma_grad`` below); ``_dirichlet_grad`` is PyTorch's approximation
(``dirichlet_grad_one`` in ATen's Distributions.h: Taylor series near 0 and 1, a saddle point
expansion for large parameters, a fitted rational correction elsewhere), branch by branch.
The numpy references use SciPy, a test dependency, imported when a reference runs.
"""

from __future__ import annotations

import numpy as np

import ember

from ..opdef import DTYPES_FLOAT, Kind, OpDef

_STEP = 1e-5  # relative step in alpha of the central differences


# ---- _standard_gamma_grad -------------------------------------------------------------------
def _gamma_tail(a, x, lower):
    # F (lower tail) or F - 1 = -Q (upper tail): both have dF/dalpha as their derivative, and
    # each keeps its relative precision in its own tail.
    return ember.where(lower, ember.special.gammainc(a, x), -ember.special.gammaincc(a, x))


def _standard_gamma_grad(input, output):
    """``dx/dalpha = -(dF/dalpha)(x; alpha) / f(x; alpha)`` for ``x ~ Gamma(alpha, 1)`` (implicit
    reparameterization, Figurnov et al. 2018); dF/dalpha is a central difference in float64, a
    relative error near 1e-10, far below the Monte Carlo noise these gradients feed."""
    a, xs = input.double(), output.double()
    h = _STEP * a
    lower = ember.special.gammainc(a, xs) <= 0.5
    d_cdf = (_gamma_tail(a + h, xs, lower) - _gamma_tail(a - h, xs, lower)) / (2 * h)
    # The ratio in log space: in far tails both d_cdf and the density underflow together.
    log_pdf = (a - 1) * ember.log(xs) - xs - ember.lgamma(a)
    ratio = ember.exp(ember.log(d_cdf.abs()) - log_pdf)
    return (-ember.sign(d_cdf) * ratio).to(input.dtype)


def _np_standard_gamma_grad(alpha, x):
    from scipy import special

    a, xs = alpha.astype(np.float64), x.astype(np.float64)
    h = _STEP * a
    d_cdf = (special.gammainc(a + h, xs) - special.gammainc(a - h, xs)) / (2 * h)
    pdf = np.exp((a - 1) * np.log(xs) - xs - special.gammaln(a))
    return (-d_cdf / pdf).astype(alpha.dtype)


# ---- _sample_dirichlet ----------------------------------------------------------------------
def _sample_dirichlet(op, self, generator=None):
    """Gamma(alpha_i, 1) draws normalized over the last dimension, as PyTorch's CPU kernel."""
    if isinstance(self, ember.Tensor) and not self.dtype.is_floating_point:
        raise RuntimeError(f'"_sample_dirichlet" not implemented for {self.dtype.name}')
    # Half types are drawn and normalized in float32: on a long simplex most of the values lie
    # below float16's smallest normal, which the clamp would otherwise flatten.
    wide = self.float() if self.dtype.itemsize < 4 else self
    gammas = ember._standard_gamma(wide, generator)
    tiny = ember.finfo(wide.dtype).tiny
    return (gammas / gammas.sum(-1, keepdim=True)).clamp(tiny, 1 - tiny).to(self.dtype)


# ---- _dirichlet_grad: ATen's dirichlet_grad_one ---------------------------------------------
def _beta_grad_alpha_small(x, alpha, beta):
    factor = ember.digamma(alpha) - ember.digamma(alpha + beta) - ember.log(x)
    numer = ember.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * (i - beta) * x / i
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    result = x * ember.pow(1 - x, -beta) * series
    return ember.nan_to_num(result, nan=0.0, posinf=float("inf"), neginf=float("-inf"))


def _beta_grad_beta_small(x, alpha, beta):
    factor = ember.digamma(alpha + beta) - ember.digamma(beta)
    numer, betas, dbetas = ember.ones_like(x), ember.ones_like(x), ember.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    result = -ember.pow(1 - x, 1 - beta) * series
    return ember.nan_to_num(result, nan=0.0, posinf=float("inf"), neginf=float("-inf"))


def _beta_grad_alpha_mid(x, alpha, beta):
    total = alpha + beta
    mean = alpha / total
    std = ember.sqrt(alpha * beta / (total + 1)) / total
    # Near the mean: a polynomial that avoids the expansion's singularity at x = mean.
    b2 = beta * beta
    inner = (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
        8 * (1 - x) * (135 * beta - 11)
    )
    inner = 3 * (59 + 180 * beta - 90 * x) * b2 + alpha * inner
    poly = 47 * x * b2 * b2 + alpha * ((43 + 20 * (16 + 27 * beta) * x) * b2 * beta + alpha * inner)
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha**3 * b2 * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / ember.sqrt(2 * alpha * beta / total)
    stirling = _stirling(alpha) * _stirling(beta) / _stirling(total)
    term1_num = 2 * alpha * alpha * (x - 1) + alpha * beta * (x - 1) - x * b2
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (ember.sqrt(2 * alpha / beta) * ember.pow(total, 1.5) * axbx * axbx)
    term2 = 0.5 * ember.log(alpha / (total * x))
    term3 = ember.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4_base = beta * ember.log(beta / (total * (1 - x))) + alpha * ember.log(alpha / (total * x))
    term4 = ember.pow(term4_base, -1.5)
    far = stirling * prefactor * (term1 + term2 * (term3 + ember.where(x < mean, term4, -term4)))
    return ember.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def _stirling(v):
    return 1 + 1 / (12 * v) + 1 / (288 * v * v)


# dirichlet_grad_one's rational correction: coefficients [numerator/denominator][u^i][a^j][b^k].
_RATIONAL = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))),
)  # fmt: skip


def _rational(x, alpha, total, beta):
    u = ember.log(x)
    a = ember.log(alpha) - u
    b = ember.log(total) - a
    sums = []
    for table in _RATIONAL:
        acc = ember.zeros_like(x)
        for i, rows in enumerate(table):
            for j, c in enumerate(rows):
                acc = acc + u**i * a**j * (c[0] + b * (c[1] + b * (c[2] + b * c[3])))
        sums.append(acc)
    approx = x * (ember.digamma(total) - ember.digamma(alpha)) / beta
    return sums[0] / sums[1] * approx


def _dirichlet_grad(x, alpha, total):
    """dirichlet_grad_one elementwise; computed in float64 (ATen's accscalar_t for the
    expansions), every branch evaluated and the one ATen takes selected."""
    xs, a, t = (v.double() for v in ember.broadcast_tensors(x, alpha, total))
    beta = t - a
    boundary = t * xs * (1 - xs)
    small = (xs <= 0.5) & (boundary < 2.5)
    large = (xs >= 0.5) & (boundary < 0.75)
    mid = (a > 6) & (beta > 6)
    found = ember.where(
        small,
        _beta_grad_alpha_small(xs, a, beta),
        ember.where(
            large,
            -_beta_grad_beta_small(1 - xs, beta, a),
            ember.where(mid, _beta_grad_alpha_mid(xs, a, beta), _rational(xs, a, t, beta)),
        ),
    )
    return found.to(x.dtype)


def _np_dirichlet_grad(x, alpha, total):
    """The implicit derivative of the Beta(alpha, beta = total - alpha) sample in alpha at fixed
    beta, scaled as ATen's (divided by 1 - x): -(d/dalpha I_x(alpha, beta)) / pdf / (1 - x)."""
    from scipy import special, stats

    xs, a, t = (np.asarray(v, dtype=np.float64) for v in np.broadcast_arrays(x, alpha, total))
    b, h = t - a, _STEP * a
    d_cdf = (special.betainc(a + h, b, xs) - special.betainc(a - h, b, xs)) / (2 * h)
    pdf = stats.beta.pdf(xs, a, b)
    return (-d_cdf / pdf / (1 - xs)).astype(np.asarray(x).dtype)


ROWS = [
    OpDef(
        "_standard_gamma_grad(Tensor input, Tensor output) -> Tensor",
        Kind.ELEMENTWISE,
        _np_standard_gamma_grad,
        dtypes=DTYPES_FLOAT,
        decomposition=_standard_gamma_grad,
        differentiable=False,
        samples="gamma_grad",
        out=None,
        notes="dx/dalpha of Gamma(alpha, 1) draws x: Gamma's rsample gradient",
    ),
    OpDef(
        "_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor",
        Kind.RANDOM,
        None,
        dtypes=DTYPES_FLOAT,
        runner=_sample_dirichlet,
        core=True,  # over _standard_gamma's kernel
        method=False,
        differentiable=False,
        kernel_args="none: normalized _standard_gamma draws",
        notes="Dirichlet(alpha) draws over the last dimension",
    ),
    OpDef(
        "_dirichlet_grad(Tensor x, Tensor alpha, Tensor total) -> Tensor",
        Kind.ELEMENTWISE,
        _np_dirichlet_grad,
        dtypes=DTYPES_FLOAT,
        decomposition=_dirichlet_grad,
        differentiable=False,
        samples="dirichlet_grad",
        out=None,
        tolerances={dt: (5e-3, 5e-2) for dt in DTYPES_FLOAT},  # ATen's approximation
        notes="ATen's dirichlet_grad_one: Dirichlet/Beta rsample gradients",
    ),
]
