"""NAdam: ``torch.optim.NAdam`` (Adam with Nesterov momentum and momentum-decay schedule)."""

from __future__ import annotations

from .optimizer import (
    Optimizer,
    adam_family_defaults,
    advance_step,
    float32,
    grads_of,
    lazy_state,
    run_closure,
    scalar,
)


class NAdam(Optimizer):
    """Implements NAdam, like ``torch.optim.NAdam``.

    ``μ_t = β1(1 - ½·0.96^(t·ψ))`` with ``ψ = momentum_decay``; ``m``, ``v`` as in Adam;
    ``θ ← θ - lr(1-μ_t)/(1-Πμ)·g/d - lr·μ_{t+1}/(1-Πμ·μ_{t+1})·m/d`` with
    ``d = sqrt(v/(1-β2^t)) + eps``. The running product ``Πμ`` (``mu_product``) is kept in
    float32, as PyTorch's 0-d float32 state tensor is.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 2e-3).
        betas: coefficients of the running averages of the gradient and its square
            (default: (0.9, 0.999)).
        eps: term added to the denominator for numerical stability (default: 1e-8).
        weight_decay: weight decay (default: 0).
        momentum_decay: ψ, the momentum decay (default: 4e-3).
        decoupled_weight_decay: NAdamW's decoupled weight decay: scale the parameters by
            ``1 - lr·weight_decay`` instead of adding the decay to the gradient (default: False).
        foreach, capturable, differentiable: accepted for PyTorch compatibility; the update is
            the same per-parameter sequence of in-place ops either way.
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.NAdam(model.parameters(), lr=2e-3)
    """

    def __init__(
        self,
        params,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
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
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            nonnegative=("momentum_decay",),
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
            psi = group["momentum_decay"]
            for p, grad in grads_of(group, 0 if decoupled else weight_decay):
                state = lazy_state(self.state, p, "exp_avg", "exp_avg_sq", mu_product=1.0)
                step = advance_step(state)
                if decoupled and weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
                mu_product = state["mu_product"] = float32(state["mu_product"] * float32(mu))
                exp_avg = state["exp_avg"].lerp_(grad, 1 - beta1)
                exp_avg_sq = state["exp_avg_sq"]
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(1 - beta2**step).sqrt_().add_(group["eps"])
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                next_product = mu_product * mu_next
                p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - next_product))
        return loss
