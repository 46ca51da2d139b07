"""Backward formulas of the activations and of their fused backward rows (issue 20).

gelu, silu, sigmoid, tanh, relu, softmax and log_softmax differentiate through one row each,
PyTorch's ``gelu_backward``, ``silu_backward``... (dispatcher/optable/activation_backward.py):
one fused kernel pass where a backend has it, the decomposition elsewhere. Those rows have their
own formulas below, PyTorch's (tools/autograd/derivatives.yaml), so double backward works.
Complex inputs (sigmoid, tanh and silu are holomorphic rows) keep the chains of ember ops: the
fused rows are real. Merged into the one table of autograd/formulas.py.
"""

from __future__ import annotations

import math

import ember as E
from ember import _dtype as dt

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_TANH_C = 0.044715


def _complex(t) -> bool:
    return t.dtype.category == dt.COMPLEX


# ---- the activations: their backward is one row -----------------------------------------------
def _gelu(ctx, g):
    return E.ops.gelu_backward(g, ctx.input, approximate=ctx.approximate)


def _silu(ctx, g):
    x = ctx.input
    if _complex(x):
        s = E.sigmoid(x)
        return g * s * (1 + x * (1 - s))
    return E.ops.silu_backward(g, x)


def _sigmoid(ctx, g):
    y = ctx.result
    if _complex(y):
        return g * y * (1 - y)
    return E.ops.sigmoid_backward(g, y)


def _tanh(ctx, g):
    y = ctx.result
    if _complex(y):
        return g * (1 - y * y)
    return E.ops.tanh_backward(g, y)


def _relu(ctx, g):
    return E.ops.threshold_backward(g, ctx.result, 0)


def _softmax(ctx, g):
    y = ctx.result
    return E._softmax_backward_data(g, y, ctx.dim, y.dtype)


def _log_softmax(ctx, g):
    y = ctx.result
    return E._log_softmax_backward_data(g, y, ctx.dim, y.dtype)


# ---- the backward rows: d/d grad_output is the row itself, d/dx the second derivative ----------
def _gelu_second(x, approximate):
    """d^2 gelu / dx^2 (PyTorch's gelu_double_backward)."""
    if approximate == "tanh":
        x2 = x * x
        inner = _SQRT_2_OVER_PI * (x + _GELU_TANH_C * x2 * x)
        d_inner = _SQRT_2_OVER_PI * (1 + 3 * _GELU_TANH_C * x2)
        t = E.tanh(inner)
        sech2 = 1 - t * t
        # d/dx [0.5 (1 + t) + 0.5 x sech2 d_inner]
        dd_inner = _SQRT_2_OVER_PI * 6 * _GELU_TANH_C * x
        return sech2 * d_inner + 0.5 * x * (sech2 * dd_inner - 2 * t * sech2 * d_inner * d_inner)
    # d/dx [Phi(x) + x phi(x)] = 2 phi(x) - x^2 phi(x)
    phi = E.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return phi * (2 - x * x)


def _gelu_backward(ctx, g):
    x, approximate = ctx.self, ctx.approximate
    grad_go = E.ops.gelu_backward(g, x, approximate=approximate)
    grad_x = g * ctx.grad_output * _gelu_second(x, approximate) if ctx.needs_input_grad[1] else None
    return grad_go, grad_x


def _silu_backward(ctx, g):
    x = ctx.self
    grad_x = None
    if ctx.needs_input_grad[1]:
        s = E.sigmoid(x)
        grad_x = g * ctx.grad_output * s * (1 - s) * (2 + x * (1 - 2 * s))
    return E.ops.silu_backward(g, x), grad_x


def _sigmoid_backward(ctx, g):
    y, go = ctx.output, ctx.grad_output
    grad_y = g * go * (1 - 2 * y) if ctx.needs_input_grad[1] else None
    return E.ops.sigmoid_backward(g, y), grad_y


def _tanh_backward(ctx, g):
    y, go = ctx.output, ctx.grad_output
    grad_y = -2 * g * go * y if ctx.needs_input_grad[1] else None
    return E.ops.tanh_backward(g, y), grad_y


def _threshold_backward(ctx, g):
    # piecewise constant in self: zero gradient there, as PyTorch's zeros_like(self)
    grad_x = E.zeros_like(ctx.self) if ctx.needs_input_grad[1] else None
    return E.ops.threshold_backward(g, ctx.self, ctx.threshold), grad_x


def _softmax_backward_data(ctx, g):
    # gi = y (go - sum(go y)): d/dgo is the same map of g; d/dy = g (go - sum(go y)) - go sum(g y)
    y, go, dim = ctx.output, ctx.grad_output, ctx.dim
    grad_go = E._softmax_backward_data(g, y, dim, y.dtype) if ctx.needs_input_grad[0] else None
    grad_y = None
    if ctx.needs_input_grad[1]:
        grad_y = g * (go - (go * y).sum(dim, keepdim=True)) - go * (g * y).sum(dim, keepdim=True)
    return grad_go, grad_y


def _log_softmax_backward_data(ctx, g):
    # gi = go - exp(y) sum(go): d/dgo = g - sum(g exp(y)); d/dy = -g exp(y) sum(go)
    y, go, dim = ctx.output, ctx.grad_output, ctx.dim
    e = E.exp(y)
    grad_go = g - (g * e).sum(dim, keepdim=True) if ctx.needs_input_grad[0] else None
    grad_y = -g * e * go.sum(dim, keepdim=True) if ctx.needs_input_grad[1] else None
    return grad_go, grad_y


FORMULAS = {
    "gelu": F(_gelu, save=("input",)),
    "silu": F(_silu, save=("input",)),
    "sigmoid": F(_sigmoid, save=("result",)),
    "tanh": F(_tanh, save=("result",)),
    "relu": F(_relu, save=("result",)),
    "softmax": F(_softmax, save=("result",)),
    "log_softmax": F(_log_softmax, save=("result",)),
    "gelu_backward": F(_gelu_backward, save=("grad_output", "self")),
    "silu_backward": F(_silu_backward, save=("grad_output", "self")),
    "sigmoid_backward": F(_sigmoid_backward, save=("grad_output", "output")),
    "tanh_backward": F(_tanh_backward, save=("grad_output", "output")),
    "threshold_backward": F(_threshold_backward, save=("self",)),
    "_softmax_backward_data": F(_softmax_backward_data, save=("grad_output", "output")),
    "_log_softmax_backward_data": F(_log_softmax_backward_data, save=("grad_output", "output")),
}
