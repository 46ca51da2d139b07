"""Stochastic gradient descent, optionally with (Nesterov) momentum: ``torch.optim.SGD``."""

from __future__ import annotations

import ember

from . import _fused
from .optimizer import (
    Optimizer,
    add_scaled,
    add_scaled_,
    check_nonnegative,
    grads_of,
    run_closure,
    scalar,
)


class SGD(Optimizer):
    """Implements stochastic gradient descent (optionally with momentum), like ``torch.optim.SGD``.

    With weight decay ``λ``, momentum ``μ`` and dampening ``τ``: ``g ← ∇ + λθ``;
    ``b ← μb + (1-τ)g`` (``b ← g`` on the first step); ``g ← g + μb`` if nesterov else ``b``;
    ``θ ← θ - lr·g``.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-3).
        momentum: momentum factor (default: 0).
        dampening: dampening for momentum (default: 0).
        weight_decay: L2 penalty (default: 0).
        nesterov: enables Nesterov momentum (default: False).
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad()
        >>> loss_fn(model(x), y).backward()
        >>> opt.step()
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        check_nonnegative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _fused.check_options(fused, foreach, differentiable)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        if fused:
            self._step_supports_amp_scaling = True  # GradScaler passes grad_scale/found_inf

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            if group["fused"]:
                self._fused_step(group)
                continue
            lists = _fused.sgd_loop_lists(group, self.state)
            if lists is not None:  # the loop's bits in one call
                self._fused_step(group, lists)
                continue
            lr = scalar(group["lr"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            nesterov = group["nesterov"]
            for p, grad in grads_of(group, group["weight_decay"]):
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        add_scaled_(buf.mul_(momentum), grad, 1 - dampening)
                    grad = add_scaled(grad, buf, momentum) if nesterov else buf
                add_scaled_(p, grad, -lr)
        return loss

    def _fused_step(self, group, lists=None) -> None:
        """One ``_fused_sgd_`` call per device and dtype (PyTorch's ``_fused_sgd``); the first
        step (no buffer yet) copies the gradient into fresh buffers inside the op. ``lists``:
        the default path's (``sgd_loop_lists``), whose gradients are unscaled already, so a
        GradScaler's ``grad_scale``/``found_inf`` (a ``fused=True`` optimizer's) is not read."""
        momentum = group["momentum"]
        amp = lists is None
        params, bufs, first = _fused.sgd_lists(self.state, group) if amp else lists
        grads = [p.grad for p in params]
        for ps, gs, bs in _fused.groups(params, grads, bufs):
            grad_scale, found_inf = _fused.amp_args(self, ps[0].device) if amp else (None, None)
            ember._fused_sgd_(ps, gs, bs if momentum != 0 else [],
                              weight_decay=group["weight_decay"], momentum=momentum,
                              lr=scalar(group["lr"]), dampening=group["dampening"],
                              nesterov=group["nesterov"], maximize=group["maximize"],
                              is_first_step=first, grad_scale=grad_scale,
                              found_inf=found_inf)  # fmt: skip
        if momentum != 0:
            for p, buf in zip(params, bufs):
                self.state[p]["momentum_buffer"] = buf
