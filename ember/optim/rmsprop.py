"""RMSprop: ``torch.optim.RMSprop`` (optionally centered, with momentum)."""

from __future__ import annotations

import ember

from .optimizer import (
    Optimizer,
    add_scaled_,
    advance_step,
    check_nonnegative,
    grads_of,
    run_closure,
    scalar,
)


class RMSprop(Optimizer):
    """Implements RMSprop, like ``torch.optim.RMSprop``.

    ``v ← alpha·v + (1-alpha)g²``; centered: ``ḡ ← alpha·ḡ + (1-alpha)g`` and the denominator
    uses ``v - ḡ²``; ``d = sqrt(·) + eps``; with momentum ``b ← μb + g/d``, ``θ ← θ - lr·b``,
    else ``θ ← θ - lr·g/d``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-2).
        alpha: smoothing constant (default: 0.99).
        eps: term added to the denominator for numerical stability (default: 1e-8).
        weight_decay: L2 penalty (default: 0).
        momentum: momentum factor (default: 0).
        centered: normalize by an estimate of the gradient's variance (default: False).
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.RMSprop(model.parameters(), lr=1e-2, momentum=0.9)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _state_for(self, p, group) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0.0
            state["square_avg"] = ember.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = ember.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            alpha = group["alpha"]
            eps = group["eps"]
            momentum = group["momentum"]
            centered = group["centered"]
            for p, grad in grads_of(group, group["weight_decay"]):
                state = self._state_for(p, group)
                advance_step(state)
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"].lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    add_scaled_(p, buf, -lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)
        return loss
