"""Gradients of complex inputs, with PyTorch's convention: the gradient is the conjugate
Wirtinger derivative, ``grad_z = conj(df/dz) * grad`` for holomorphic ``f`` (so ``grad`` of a
real loss points along steepest ascent, and real inputs get PyTorch's real gradients back).

The real formulas of the holomorphic rows are ``grad * f'(z)``, linear in ``grad`` and built from
holomorphic ops of ``z``; so ``conj(formula(conj(grad)))`` is ``grad * conj(f'(z))``, the right
complex gradient, and HOLOMORPHIC rows get that wrapper instead of a second formula each. The
others (abs, softsign, angle, the views, the conjugate) have their own formulas below.
"""

from __future__ import annotations

import ember as E
from ember import _dtype as dt

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter

HOLOMORPHIC = frozenset(
    {"neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tan"}
    | {"sinh", "cosh", "tanh", "sigmoid", "add", "sub", "mul", "div", "pow", "sum", "prod"}
    | {"mm", "bmm", "addmm", "cumprod", "silu", "conv1d", "conv2d"}
)


def _conj(value):
    if isinstance(value, E.Tensor) and value.dtype.category == dt.COMPLEX:
        return E.conj_physical(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_conj(v) for v in value)
    return value


def _holomorphic(fn):
    def formula(ctx, *grads):
        for g in grads:  # a loop, not any(): this runs for most nodes of a real backward
            if g is not None and g._dtype.category == dt.COMPLEX:
                return _conj(fn(ctx, *_conj(grads)))
        return fn(ctx, *grads)

    formula.__name__ = getattr(fn, "__name__", "formula")
    formula.__wrapped__ = fn  # the holomorphic derivative itself: the JVP (autograd/jvp_rules.py)
    return formula


def _sgn(z):
    """z / |z|, 0 at 0 (PyTorch's sgn)."""
    magnitude = E.abs(z)
    zero = magnitude == 0
    return E.where(zero, E.zeros_like(z), z / E.where(zero, E.ones_like(magnitude), magnitude))


def _split(real_formula, complex_formula):
    """A row's formula: ``complex_formula`` for complex inputs, its real one otherwise."""

    def formula(ctx, g):
        if ctx.input.dtype.category == dt.COMPLEX:
            return complex_formula(ctx, g)
        return real_formula(ctx, g)

    return formula


def _abs(ctx, g):
    return g * _sgn(ctx.input)


def _softsign(ctx, g):
    """softsign z / s, s = 1 + |z| (real), by the chain rule through the quotient and abs (as
    PyTorch's composite): g / s - sgn(z) Re(g conj(z)) / s^2; g / s^2 for real z."""
    z = ctx.input
    s = 1 + E.abs(z)
    return g / s - _sgn(z) * (E.real(g * E.conj_physical(z)) / (s * s))


def _angle(ctx, g):
    z = ctx.input
    if z.dtype.category != dt.COMPLEX:
        return E.zeros_like(z)
    # d arg(z): PyTorch's angle_backward, grad * i z / |z|^2, 0 at 0
    magnitude = E.abs(z)
    zero = magnitude == 0
    safe = E.where(zero, E.ones_like(magnitude), magnitude)
    return E.where(zero, E.zeros_like(z), g * z * 1j / (safe * safe))


def _sgn_formula(ctx, g):
    """PyTorch's sgn_backward: (g - s Re(conj(s) g)) / |z| for s = z/|z| (the real-linear map
    is its own adjoint), 0 at 0; real inputs: 0, as sign's."""
    z = ctx.input
    if z.dtype.category != dt.COMPLEX:
        return E.zeros_like(z)
    s = _sgn(z)
    magnitude = E.abs(z)
    zero = magnitude == 0
    safe = E.where(zero, E.ones_like(magnitude), magnitude)
    return E.where(zero, E.zeros_like(z), (g - s * E.real(E.conj_physical(s) * g)) / safe)


FORMULAS = {
    "view_as_real": F(lambda ctx, g: E.view_as_complex(g.contiguous())),
    "view_as_complex": F(lambda ctx, g: E.view_as_real(g.resolve_conj())),
    "conj_physical": F(lambda ctx, g: E.conj_physical(g)),
    "_conj": F(lambda ctx, g: E._conj(g) if g.dtype.is_complex else g),
    "_neg_view": F(lambda ctx, g: E._neg_view(g)),
    "angle": F(_angle, save=("input",)),
    "sgn": F(_sgn_formula, save=("input",)),
}


# Rows that are not holomorphic (|z|): their own formula for complex inputs.
SPLIT = {"abs": _abs, "softsign": _softsign}


def install(formulas: dict) -> None:
    """Make the holomorphic rows' formulas and SPLIT's complex-aware; add the complex rows'."""
    for name in HOLOMORPHIC:
        formulas[name].fn = _holomorphic(formulas[name].fn)
    for name, complex_formula in SPLIT.items():
        formulas[name].fn = _split(formulas[name].fn, complex_formula)
    formulas.update(FORMULAS)
