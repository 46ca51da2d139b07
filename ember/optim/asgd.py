"""ASGD: ``torch.optim.ASGD`` (averaged stochastic gradient descent)."""

from __future__ import annotations

import ember

from .optimizer import (
    Optimizer,
    add_scaled_,
    advance_step,
    check_nonnegative,
    float32,
    grads_of,
    run_closure,
    scalar,
)


class ASGD(Optimizer):
    """Implements averaged SGD, like ``torch.optim.ASGD``.

    ``θ ← θ(1 - λη) - η·g``; the average ``ax ← ax + μ(θ - ax)`` (a copy of ``θ`` while
    ``μ = 1``); then ``η = lr/(1 + λ·lr·t)^alpha`` and ``μ = 1/max(1, t - t0)``. ``η`` and ``μ``
    are kept in float32, as PyTorch's 0-d float32 state tensors are.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-2).
        lambd: decay term (default: 1e-4).
        alpha: power for the eta update (default: 0.75).
        t0: the step at which averaging starts (default: 1e6).
        weight_decay: L2 penalty (default: 0).
        foreach, capturable, differentiable: accepted for PyTorch compatibility; the update is
            the same per-parameter sequence of in-place ops either way.
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.ASGD(model.parameters(), lr=1e-2, t0=100)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _state_for(self, p, lr) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0.0
            state["eta"] = float32(lr)
            state["mu"] = 1.0
            state["ax"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            for p, grad in grads_of(group, group["weight_decay"]):
                state = self._state_for(p, lr)
                step = advance_step(state)
                eta = state["eta"]
                p.mul_(1 - lambd * eta)
                add_scaled_(p, grad, -eta)
                ax = state["ax"]
                if state["mu"] != 1:
                    ax.add_(p.sub(ax).mul_(state["mu"]))
                else:
                    ax.copy_(p)
                state["eta"] = float32(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"] = float32(1 / max(1, step - t0))
        return loss
