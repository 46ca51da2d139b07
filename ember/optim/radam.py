"""RAdam: ``torch.optim.RAdam`` (Adam with a rectified adaptive learning rate)."""

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


class RAdam(Optimizer):
    """Implements RAdam, like ``torch.optim.RAdam``.

    ``m``, ``v`` as in Adam; ``rho_inf = 2/(1-β2) - 1``,
    ``rho_t = rho_inf - 2tβ2^t/(1-β2^t)``; while ``rho_t > 5`` the step is
    ``lr·m̂·r_t·sqrt(1-β2^t)/(sqrt(v)+eps)`` with the rectification
    ``r_t = sqrt((rho_t-4)(rho_t-2)rho_inf / ((rho_inf-4)(rho_inf-2)rho_t))``, before that
    plain ``lr·m̂``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-3).
        betas: coefficients of the running averages (default: (0.9, 0.999)).
        eps: term added to the denominator for numerical stability (default: 1e-8).
        weight_decay: weight decay (default: 0).
        decoupled_weight_decay: RAdamW: scale the parameters by ``1 - lr·weight_decay``
            instead of adding the decay to the gradient (default: False).
        foreach, capturable, differentiable: accepted for PyTorch compatibility; the update is
            the same per-parameter sequence of in-place ops either way.
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.RAdam(model.parameters(), lr=1e-3)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = adam_family_defaults(
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            decoupled_weight_decay=decoupled_weight_decay,
            differentiable=differentiable,
        )
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            beta1, beta2 = group["betas"]
            weight_decay = group["weight_decay"]
            decoupled = group["decoupled_weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p, grad in grads_of(group, 0 if decoupled else weight_decay):
                state = lazy_state(self.state, p, "exp_avg", "exp_avg_sq")
                step = advance_step(state)
                if decoupled and weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                exp_avg = state["exp_avg"].lerp_(grad, 1 - beta1)
                exp_avg_sq = state["exp_avg_sq"]
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction2 = 1 - beta2**step
                update = exp_avg.div(1 - beta1**step).mul_(lr)
                rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
                if rho_t > 5.0:
                    # PyTorch's order: m̂·lr·(sqrt(bc2)/(sqrt(v)+eps))·r_t.
                    adaptive = exp_avg_sq.sqrt().add_(group["eps"]).reciprocal_()
                    update.mul_(adaptive.mul_(bias_correction2**0.5))
                    rect = (rho_t - 4) * (rho_t - 2) * rho_inf
                    update.mul_((rect / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5)
                p.sub_(update)
        return loss
