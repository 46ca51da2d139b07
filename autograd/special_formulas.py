"""Backward formulas of the special functions, PyTorch's (tools/autograd/derivatives.yaml and
FunctionsManual.cpp), in ember ops: they run on every device and are differentiable again.

Merged into the one table of autograd/formulas.py. Where a formula divides by x or takes a log,
``_safe`` moves the excluded point away first, so the unused branch of a ``where`` cannot leak a
NaN into the gradient.
"""

from __future__ import annotations

import math

import ember as E

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter

_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _safe(x, bad):
    """x with its entries where ``bad`` replaced by 1."""
    return E.where(bad, E.ones_like(x), x)


def _polygamma(ctx, g):
    return g * E.ops.polygamma(ctx.input, ctx.n + 1)


def _sinc(ctx, g):
    x = ctx.input
    zero = x == 0
    xs = _safe(x, zero)
    px = math.pi * xs
    d = (px * E.cos(px) - E.sin(px)) / (px * xs)
    return g * E.where(zero, E.zeros_like(x), d)


def _i1(ctx, g):
    # i1'(x) = i0(x) - i1(x) / x, 1/2 at 0
    x = ctx.input
    zero = x == 0
    d = E.i0(x) - ctx.result / _safe(x, zero)
    return g * E.where(zero, E.full_like(x, 0.5), d)


def _i1e(ctx, g):
    # i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1 / x), 1/2 at 0
    x = ctx.input
    zero = x == 0
    d = E.special.i0e(x) - ctx.result * (E.sign(x) + 1 / _safe(x, zero))
    return g * E.where(zero, E.full_like(x, 0.5), d)


def _xlog1py(ctx, g):
    from .formulas import _tensor  # formulas.py imports this module

    x, y = _tensor(ctx.input, g), _tensor(ctx.other, g)
    needs_x, needs_y = ctx.needs_input_grad
    grad_x = None
    if needs_x:
        # log1p(y), also at x = 0 (as xlogy); 0 where that is undefined, as PyTorch
        grad_x = E.where((x == 0) & (y <= -1), E.zeros_like(g), g * E.log1p(y))
    return grad_x, (g * x / (1 + y) if needs_y else None)


FORMULAS = {
    "lgamma": F(lambda ctx, g: g * E.digamma(ctx.input), save=("input",)),
    "digamma": F(lambda ctx, g: g * E.ops.polygamma(ctx.input, 1), save=("input",)),
    "polygamma": F(_polygamma, save=("input",)),
    "erfinv": F(
        lambda ctx, g: g * _SQRT_PI_OVER_2 * E.exp(ctx.result * ctx.result), save=("result",)
    ),
    "i0": F(lambda ctx, g: g * E.special.i1(ctx.input), save=("input",)),
    "sinc": F(_sinc, save=("input",)),
    "special_i0e": F(
        lambda ctx, g: g * (E.special.i1e(ctx.input) - E.sign(ctx.input) * ctx.result),
        save=("input", "result"),
    ),
    "special_i1": F(_i1, save=("input", "result")),
    "special_i1e": F(_i1e, save=("input", "result")),
    "special_erfcx": F(
        lambda ctx, g: g * (2 * ctx.input * ctx.result - _TWO_OVER_SQRT_PI),
        save=("input", "result"),
    ),
    "special_ndtr": F(
        lambda ctx, g: g * _INV_SQRT_2PI * E.exp(-0.5 * ctx.input * ctx.input), save=("input",)
    ),
    "special_ndtri": F(
        lambda ctx, g: g * (1 / _INV_SQRT_2PI) * E.exp(0.5 * ctx.result * ctx.result),
        save=("result",),
    ),
    "special_log_ndtr": F(
        lambda ctx, g: g * _INV_SQRT_2PI * E.exp(-0.5 * ctx.input * ctx.input - ctx.result),
        save=("input", "result"),
    ),
    "special_entr": F(lambda ctx, g: -g * (1 + E.log(ctx.input)), save=("input",)),
    "special_xlog1py": F(_xlog1py, save=("input", "other")),
}
