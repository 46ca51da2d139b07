"""Reparameterized gamma and Dirichlet samples, as torch.distributions' ``_StandardGamma`` and
``_Dirichlet``: the draws come from the sampler rows, the backward from the rows
``_standard_gamma_grad`` (dx/dalpha of a Gamma(alpha, 1) draw) and ``_dirichlet_grad``
(dispatcher/optable/distribution_grads.py)."""

from __future__ import annotations

import ember

from ._gamma_sampler import standard_gamma


def standard_gamma_grad(alpha, x):
    """``dx/dalpha`` for samples ``x`` of Gamma(alpha, 1), as torch._standard_gamma_grad."""
    return ember._standard_gamma_grad(alpha, x)


class _StandardGamma(ember.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x = standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * ember._standard_gamma_grad(alpha, x)


class _Dirichlet(ember.autograd.Function):
    @staticmethod
    def forward(ctx, concentration):
        with ember.no_grad():
            x = ember._sample_dirichlet(concentration.detach())
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, keepdim=True).expand_as(concentration)
        grad = ember._dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, keepdim=True))


def standard_gamma_rsample(alpha):
    """Samples of Gamma(alpha, 1) shaped like ``alpha``, differentiable in ``alpha``."""
    return _StandardGamma.apply(alpha)


def dirichlet_rsample(concentration):
    """Dirichlet(concentration) samples over the last dimension, differentiable as torch's."""
    return _Dirichlet.apply(concentration)
