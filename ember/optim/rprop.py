"""Rprop: ``torch.optim.Rprop`` (resilient backpropagation)."""

from __future__ import annotations

import ember

from .optimizer import Optimizer, advance_step, check_nonnegative, grads_of, run_closure, scalar


class Rprop(Optimizer):
    """Implements the resilient backpropagation algorithm, like ``torch.optim.Rprop``.

    Each element keeps its own step size: multiplied by ``etaplus`` when the gradient keeps
    its sign, by ``etaminus`` when it flips (and that element's gradient is then taken as 0,
    so it neither moves nor counts as a sign next step), clamped to ``step_sizes``;
    ``θ ← θ - sign(g)·step_size``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: initial step size (default: 1e-2).
        etas: (etaminus, etaplus), the multiplicative decrease and increase factors
            (default: (0.5, 1.2)).
        step_sizes: minimal and maximal allowed step sizes (default: (1e-6, 50)).
        capturable, foreach, differentiable: accepted for PyTorch compatibility; the update is
            the same per-parameter sequence of ops either way.
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.Rprop(model.parameters(), lr=1e-2)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _state_for(self, p, grad, lr) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0.0
            state["prev"] = ember.zeros_like(p)
            state["step_size"] = ember.full_like(grad, scalar(lr))
        return state

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, grad in grads_of(group):
                state = self._state_for(p, grad, group["lr"])
                advance_step(state)
                prev = state["prev"]
                # PyTorch's sequence of masked writes, in the parameter's dtype.
                factor = grad.mul(prev).sign_()
                factor = factor.masked_fill_(factor > 0, etaplus)
                factor = factor.masked_fill_(factor < 0, etaminus).masked_fill_(factor == 0, 1)
                step_size = state["step_size"].mul_(factor)
                step_size.clamp_(step_size_min, step_size_max)
                # A flipped sign: skip this element now and forget its sign for the next step.
                grad = grad.masked_fill(factor == etaminus, 0)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
