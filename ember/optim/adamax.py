"""Adamax: ``torch.optim.Adamax`` (Adam with the infinity norm)."""

from __future__ import annotations

from .optimizer import (
    Optimizer,
    adam_family_defaults,
    advance_step,
    grads_of,
    lazy_state,
    run_closure,
    scalar,
)


class Adamax(Optimizer):
    """Implements Adamax, like ``torch.optim.Adamax``.

    ``m ← β1·m + (1-β1)g``, ``u ← max(β2·u, |g| + eps)``, ``θ ← θ - lr/(1-β1^t) · m/u``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 2e-3).
        betas: coefficients of the running average of the gradient and of the infinity norm
            (default: (0.9, 0.999)).
        eps: term added to the denominator for numerical stability (default: 1e-8).
        weight_decay: L2 penalty (default: 0).
        foreach, capturable, differentiable: accepted for PyTorch compatibility; the update is
            the same per-parameter sequence of in-place ops either way.
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.Adamax(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = adam_family_defaults(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            foreach=foreach,
            maximize=maximize,
            differentiable=differentiable,
            capturable=capturable,
        )
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            beta1, beta2 = group["betas"]
            for p, grad in grads_of(group, group["weight_decay"]):
                state = lazy_state(self.state, p, "exp_avg", "exp_inf")
                step = advance_step(state)
                exp_avg = state["exp_avg"].lerp_(grad, 1 - beta1)
                exp_inf = state["exp_inf"].mul_(beta2).maximum_(grad.abs().add_(group["eps"]))
                p.addcdiv_(exp_avg, exp_inf, value=-lr / (1 - beta1**step))
        return loss
