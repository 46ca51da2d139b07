"""Adagrad: ``torch.optim.Adagrad``."""

from __future__ import annotations

import ember

from .optimizer import Optimizer, advance_step, check_nonnegative, grads_of, run_closure, scalar


class Adagrad(Optimizer):
    """Implements Adagrad, like ``torch.optim.Adagrad``.

    ``lr_t = lr / (1 + (t-1)·lr_decay)``, ``s ← s + g²``, ``θ ← θ - lr_t · g / (sqrt(s) + eps)``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-2).
        lr_decay: learning rate decay (default: 0).
        weight_decay: L2 penalty (default: 0).
        initial_accumulator_value: initial value of the sum of squared gradients (default: 0).
        eps: term added to the denominator for numerical stability (default: 1e-10).
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.Adagrad(model.parameters(), lr=1e-2)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_nonnegative(
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
        )
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        # PyTorch creates Adagrad's state up front, so it shows in state_dict before any step.
        for group in self.param_groups:
            for p in group["params"]:
                self._state_for(p, group)

    def _state_for(self, p, group) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0.0
            state["sum"] = ember.full_like(p, group["initial_accumulator_value"])
        return state

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            lr_decay = group["lr_decay"]
            eps = group["eps"]
            for p, grad in grads_of(group, group["weight_decay"]):
                state = self._state_for(p, group)
                step = advance_step(state)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = state["sum"].addcmul_(grad, grad, value=1)
                std = state_sum.sqrt().add_(eps)
                p.addcdiv_(grad, std, value=-clr)
        return loss
