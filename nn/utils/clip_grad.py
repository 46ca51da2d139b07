"""Gradient clipping, like ``torch.nn.utils``."""

from __future__ import annotations

import math

import ember


def _grads(parameters):
    if isinstance(parameters, ember.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale gradients so their total ``norm_type`` norm is at most ``max_norm``; returns it."""
    grads = _grads(parameters)
    if not grads:
        return ember.tensor(0.0)
    norm_type = float(norm_type)
    with ember.no_grad():
        if norm_type == math.inf:
            norms = [g.detach().abs().amax() for g in grads]
            total = norms[0] if len(norms) == 1 else ember.stack(norms).amax()
        else:
            norms = [g.detach().norm(norm_type) for g in grads]
            total = ember.stack(norms).norm(norm_type)
        if error_if_nonfinite and not bool(ember.isfinite(total).all()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        coef = ember.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    with ember.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
