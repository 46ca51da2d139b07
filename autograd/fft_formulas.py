"""Backward formulas of the FFT primitives, PyTorch's (FunctionsManual.cpp: fft_r2c_backward,
fft_c2r_backward; c2c is its own adjoint with the direction flipped), in ember ops.

Complex tensors are their real view (a trailing dim of 2). A real function's gradient with
respect to (re, im) is PyTorch's conjugate Wirtinger gradient in that view, so the formulas carry
over unchanged. Merged into the one table of autograd/formulas.py.
"""

from __future__ import annotations

import numpy as np

import ember as E

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter


def _last_dim(dims, ndim: int) -> int:
    return max(d % ndim for d in dims)


def _c2c(ctx, g):
    return E.ops._fft_c2c(g, ctx.dim, ctx.normalization, not ctx.forward)


def _r2c(ctx, g):
    shape = ctx.shape("input")
    if ctx.onesided:
        # the one-sided output is the full transform's first half: pad the gradient with zeros
        last = _last_dim(ctx.dim, len(shape))
        missing = shape[last] - g.shape[last]
        if missing:
            pad = list(g.shape)
            pad[last] = missing
            g = E.cat([g, E.zeros(pad, dtype=g.dtype, device=g.device)], last)
    return E.ops._fft_c2c(g, ctx.dim, ctx.normalization, False)[..., 0]


def _c2r(ctx, g):
    grad = E.ops._fft_r2c(g, ctx.dim, ctx.normalization, True)
    last = _last_dim(ctx.dim, g.ndim)
    doubled = g.shape[last] - grad.shape[last]  # the bins irfft counts twice (conjugate pairs)
    if doubled <= 0:
        return grad
    scale = np.ones(grad.shape[last])
    scale[1 : 1 + doubled] = 2
    view = [1] * grad.ndim
    view[last] = grad.shape[last]
    return grad * E.tensor(scale.reshape(view), dtype=grad.dtype, device=grad.device)


FORMULAS = {
    "_fft_r2c": F(_r2c),
    "_fft_c2r": F(_c2r),
    "_fft_c2c": F(_c2c),
}
