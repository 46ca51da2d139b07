"""Adadelta: ``torch.optim.Adadelta``."""

from __future__ import annotations

from .optimizer import (
    Optimizer,
    add_scaled_,
    advance_step,
    check_nonnegative,
    grads_of,
    lazy_state,
    run_closure,
    scalar,
)


class Adadelta(Optimizer):
    """Implements Adadelta, like ``torch.optim.Adadelta``.

    ``v ← rho·v + (1-rho)g²``, ``Δ = sqrt(u + eps)/sqrt(v + eps) · g``, ``u ← rho·u + (1-rho)Δ²``,
    ``θ ← θ - lr·Δ``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: coefficient that scales delta before it is applied to the parameters
            (default: 1.0).
        rho: coefficient of the running averages of the squared gradient and update
            (default: 0.9).
        eps: term added to the denominators for numerical stability (default: 1e-6).
        weight_decay: L2 penalty (default: 0).
        foreach, capturable, differentiable: accepted for PyTorch compatibility; the update is
            the same per-parameter sequence of in-place ops either way.
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.Adadelta(model.parameters())
    """

    def __init__(
        self,
        params,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            rho, eps = group["rho"], group["eps"]
            for p, grad in grads_of(group, group["weight_decay"]):
                state = lazy_state(self.state, p, "square_avg", "acc_delta")
                advance_step(state)
                square_avg = state["square_avg"].mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                acc_delta = state["acc_delta"]
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                add_scaled_(p, delta, -lr)
        return loss
