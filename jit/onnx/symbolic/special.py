"""Special functions (ember.special and their top-level names) that have a closed form in ONNX
ops, with PyTorch's values at the points where the formula alone is undefined (0, inf).

The others (gamma and Bessel families, orthogonal polynomials, erfinv...) have neither an ONNX op
nor a closed form: ``table.UNMAPPED`` says why for each.
"""

from __future__ import annotations

import math

from ember import _dtype as dt

from .elementwise import _c, _float_input, x_log


def _where_zero(g, x, at_zero: float, elsewhere):
    """``elsewhere``, but ``at_zero`` where x == 0 (where the formula divides 0 by 0)."""
    is_zero = g.op("Equal", x, _c(g, 0, x), dtype=dt.bool_)
    return g.op("Where", is_zero, _c(g, at_zero, x), elsewhere)


def sinc(g, x):
    """sin(pi x) / (pi x), 1 at 0."""
    x = _float_input(g, x)
    scaled = g.op("Mul", x, _c(g, math.pi, x))
    return _where_zero(g, x, 1, g.op("Div", g.op("Sin", scaled), scaled))


def spherical_bessel_j0(g, x):
    """sin(x) / x, 1 at 0 and 0 at +-inf (PyTorch's special cases)."""
    x = _float_input(g, x)
    value = _where_zero(g, x, 1, g.op("Div", g.op("Sin", x), x))
    return g.op("Where", g.op("IsInf", x, dtype=dt.bool_), _c(g, 0, x), value)


def entr(g, x):
    """-x log(x) for x > 0, 0 at 0, -inf below (NaN stays NaN)."""
    x = _float_input(g, x)
    value = _where_zero(g, x, 0, g.op("Neg", g.op("Mul", x, g.op("Log", x))))
    negative = g.op("Less", x, _c(g, 0, x), dtype=dt.bool_)
    return g.op("Where", negative, _c(g, -math.inf, x), value)


def xlog1py(g, a, b):
    return x_log(g, a, b, 1)


def ndtr(g, x):
    """The standard normal CDF, 0.5 (1 + erf(x / sqrt 2))."""
    x = _float_input(g, x)
    erf = g.op("Erf", g.op("Mul", x, _c(g, math.sqrt(0.5), x)))
    return g.op("Mul", _c(g, 0.5, x), g.op("Add", _c(g, 1, x), erf))


TABLE = {
    "sinc": sinc,
    "special_spherical_bessel_j0": spherical_bessel_j0,
    "special_entr": entr,
    "special_xlog1py": xlog1py,
    "special_ndtr": ndtr,
}
