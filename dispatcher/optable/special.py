"""Special functions (``ember.special`` and the top-level ``lgamma``, ``digamma``, ``polygamma``,
``erfinv``, ``i0``, ``sinc``, ``logit``, ``mvlgamma``, ``igamma``, ``igammac``): one row each.

Names follow ATen (``special_i0e`` is ``ember.special.i0e``). References come from
``scipy.special``, a test-only dependency imported when a reference runs; where SciPy's answer
differs from PyTorch's (poles, negative orders), the reference follows PyTorch. The special
functions that are other ops under a second name (``expit``, ``exp2``, ``expm1``, ``log1p``,
``erf``, ``erfc``, ``round``, ``softmax``, ``log_softmax``, ``logsumexp``, ``xlogy``) are aliases
in ``ember/special.py``, not rows.
"""

from __future__ import annotations

import math

import numpy as np

from ember import _dtype as dt

from ..opdef import DTYPES_FLOAT, Kind, OpDef, Promotion
from ._special_refs import POLYNOMIALS, polynomial, scipy_ref, trigamma_f32
from .elementwise import binary, unary

I2F = Promotion.INT_TO_FLOAT
NOT_TOP_LEVEL = {"function": False, "method": False}


def _special_unary(name, ref, **kw):
    """A row of ``ember.special`` only: no top-level function, no method, no in-place form."""
    return unary(name, ref, inplace=False, **{**NOT_TOP_LEVEL, **kw})


def _special_binary(name, ref, **kw):
    return binary(
        name, ref, dtypes=DTYPES_FLOAT, promotion=I2F, inplace=False, **{**NOT_TOP_LEVEL, **kw}
    )


def _digamma(x):
    """scipy's psi is NaN at 0; PyTorch (and C++'s std) give -inf at +0, +inf at -0."""
    out = scipy_ref("psi")(x)
    return np.where(x == 0, np.copysign(np.inf, -x), out)


def _polygamma(x, n):
    if n == 0:
        return _digamma(x)
    if n == 1 and np.asarray(x).dtype == np.float32:
        return trigamma_f32(x)  # PyTorch computes it in float32
    return scipy_ref("polygamma")(n, x)


def _entr(x):
    with np.errstate(all="ignore"):
        return np.where(x < 0, -np.inf, scipy_ref("entr")(x))


def _logit(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _as_float(input):
    """Integers and bool promote to the default float (INT_TO_FLOAT), before any arithmetic."""
    return input if input.is_floating_point() else input.to(dt.get_default_dtype())


def _logit_decomposition(input, eps=None):
    input = _as_float(input)
    x = input if eps is None else input.clamp(eps, 1 - eps)
    return (x / (1 - x)).log()


def _mvlgamma_ref(x, p):
    return sum(scipy_ref("gammaln")(x - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(
        math.pi
    )


def check_mvlgamma_order(p) -> None:
    if p < 1:
        raise RuntimeError("mvlgamma: p has to be greater than or equal to 1")


def _mvlgamma(input, p):
    """PyTorch's check and sum of lgamma(x - j/2), j < p, plus log(pi) p (p - 1) / 4."""
    check_mvlgamma_order(p)
    if input.numel() and not bool((input > 0.5 * (p - 1)).all()):
        raise RuntimeError(f"mvlgamma: All elements must be greater than (p-1)/2 (p={p})")
    input = _as_float(input)
    out = input.lgamma()
    for j in range(1, p):
        out = out + (input - 0.5 * j).lgamma()
    return out + p * (p - 1) / 4 * math.log(math.pi)


def _spherical_j0(x):
    return np.where(x == 0, 1.0, scipy_ref("spherical_jn")(0, x))


def _airy_ai(x):
    return scipy_ref("airy")(x)[0]


def _gamma_inc(name):
    """gammainc/gammaincc with PyTorch's answers outside scipy's domain (a or x negative: NaN)."""

    def ref(a, x):
        out = scipy_ref(name)(a, x)
        return np.where((np.asarray(a) < 0) | (np.asarray(x) < 0), np.nan, out)

    return ref


# name, reference, domain: the sampled range of the generated tests (the edge values, poles and
# large arguments are in tests/special/test_special_torch.py, against PyTorch).
_UNARY = (
    ("special_erfcx", scipy_ref("erfcx"), (-5, 30)),
    ("special_i0e", scipy_ref("i0e"), (-30, 30)),
    ("special_i1", scipy_ref("i1"), (-20, 20)),
    ("special_i1e", scipy_ref("i1e"), (-30, 30)),
    ("special_ndtr", scipy_ref("ndtr"), (-10, 10)),
    ("special_ndtri", scipy_ref("ndtri"), (0.0, 1.0)),
    ("special_log_ndtr", scipy_ref("log_ndtr"), (-30, 10)),
    ("special_entr", _entr, (-1, 5)),
    ("special_bessel_j0", scipy_ref("j0"), (-30, 30)),
    ("special_bessel_j1", scipy_ref("j1"), (-30, 30)),
    ("special_bessel_y0", scipy_ref("y0"), (0.1, 30)),
    ("special_bessel_y1", scipy_ref("y1"), (0.1, 30)),
    ("special_modified_bessel_i0", scipy_ref("i0"), (-20, 20)),
    ("special_modified_bessel_i1", scipy_ref("i1"), (-20, 20)),
    ("special_modified_bessel_k0", scipy_ref("k0"), (0.05, 30)),
    ("special_modified_bessel_k1", scipy_ref("k1"), (0.05, 30)),
    ("special_scaled_modified_bessel_k0", scipy_ref("k0e"), (0.05, 30)),
    ("special_scaled_modified_bessel_k1", scipy_ref("k1e"), (0.05, 30)),
    ("special_spherical_bessel_j0", _spherical_j0, (-30, 30)),
    ("special_airy_ai", _airy_ai, (-10, 10)),
)
# PyTorch's double J0, J1, Y0, Y1 and Ai (which ember's kernels are) lose up to 3e-6 absolute
# near their region boundaries against SciPy's: the rows compare with SciPy at that tolerance
_LOOSE = {"special_bessel_j0", "special_bessel_j1", "special_bessel_y0", "special_bessel_y1"}
_LOOSE |= {"special_airy_ai"}
_LOOSE_TOLERANCE = {dt.float64: (1e-5, 5e-6)}
# The polynomials' recurrences amplify the rounding of x in half precision
_HALF_TOLERANCE = {dt.float16: (1e-2, 1e-2), dt.bfloat16: (5e-2, 5e-2)}

# Gradients PyTorch does not define: the rows say so (ember gives no graph, PyTorch raises).
# igamma, igammac and zeta: PyTorch differentiates in the second argument only; ember's rows are
# differentiable in all tensor arguments or none, so they are marked non-differentiable for now.
_NO_GRADIENT = {
    "special_bessel_j0",
    "special_bessel_j1",
    "special_bessel_y0",
    "special_bessel_y1",
    "special_modified_bessel_i0",
    "special_modified_bessel_i1",
    "special_modified_bessel_k0",
    "special_modified_bessel_k1",
    "special_scaled_modified_bessel_k0",
    "special_scaled_modified_bessel_k1",
    "special_spherical_bessel_j0",
    "special_airy_ai",
}

ROWS = [
    # ---- top level and Tensor methods, as in PyTorch -------------------------------------------
    unary("lgamma", scipy_ref("gammaln"), domain=(0.1, 20)),
    unary("digamma", _digamma, domain=(0.1, 20)),
    unary(
        "polygamma",
        _polygamma,
        params=", int n",
        function=False,  # torch.polygamma(n, input): ember/_special.py puts n first
        samples="polygamma",
        notes="x.polygamma(n); the function is polygamma(n, input)",
    ),
    unary("erfinv", scipy_ref("erfinv"), domain=(-0.99, 0.99)),
    unary("i0", scipy_ref("i0"), domain=(-20, 20)),
    unary("sinc", np.sinc, domain=(-5, 5)),
    OpDef(
        "logit(Tensor input, float? eps=None) -> Tensor",
        Kind.ELEMENTWISE,
        _logit,
        promotion=I2F,
        dtypes=DTYPES_FLOAT,
        decomposition=_logit_decomposition,
        samples="logit",
        domain=(0.0, 1.0),
        notes="log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given",
    ),
    OpDef(
        "mvlgamma(Tensor input, int p) -> Tensor",
        Kind.ELEMENTWISE,
        _mvlgamma_ref,
        promotion=I2F,
        dtypes=DTYPES_FLOAT,
        decomposition=_mvlgamma,
        samples="mvlgamma",
        tolerances={dt.float16: (4e-3, 4e-2), dt.bfloat16: (3e-2, 0.3)},  # p lgammas summed
        notes="ember.special.multigammaln",
    ),
    *[
        binary(
            row,
            _gamma_inc(scipy_name),
            dtypes=DTYPES_FLOAT,
            promotion=Promotion.DEFAULT,  # PyTorch refuses integer operands, not promotes them
            samples="gamma_inc",
            differentiable=False,  # PyTorch differentiates in x only (see _NO_GRADIENT)
            notes=f"ember.special.{scipy_name}",
        )
        for row, scipy_name in (("igamma", "gammainc"), ("igammac", "gammaincc"))
    ],
    # ---- ember.special only --------------------------------------------------------------------
    *[
        _special_unary(
            name,
            ref,
            domain=domain,
            differentiable=name not in _NO_GRADIENT,
            tolerances=_LOOSE_TOLERANCE if name in _LOOSE else {},
        )
        for name, ref, domain in _UNARY
    ],
    _special_binary("special_zeta", scipy_ref("zeta"), samples="zeta", differentiable=False),
    _special_binary("special_xlog1py", scipy_ref("xlog1py"), samples="xlog1py"),
    *[
        _special_binary(
            f"special_{name}",
            polynomial(name),
            samples="polynomial",
            differentiable=False,
            tolerances=_HALF_TOLERANCE,
        )
        for name in POLYNOMIALS
    ],
]
