"""Adam and AdamW: ``torch.optim.Adam`` / ``torch.optim.AdamW``, with PyTorch's update order."""

from __future__ import annotations

import ember

from . import _fused
from .optimizer import Optimizer, advance_step, check_nonnegative, grads_of, run_closure, scalar


class Adam(Optimizer):
    """Implements Adam, like ``torch.optim.Adam``.

    ``m ← β1·m + (1-β1)g``, ``v ← β2·v + (1-β2)g²``,
    ``θ ← θ - lr/(1-β1^t) · m / (sqrt(v)/sqrt(1-β2^t) + eps)``; with ``amsgrad``, ``v`` in the
    denominator is the running maximum of ``v``. Weight decay is added to the gradient (L2), or
    with ``decoupled_weight_decay=True`` (AdamW) scales the parameters by ``1 - lr·λ`` first.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-3).
        betas: coefficients of the running averages of the gradient and its square
            (default: (0.9, 0.999)).
        eps: term added to the denominator for numerical stability (default: 1e-8).
        weight_decay: weight decay (default: 0).
        amsgrad: use the AMSGrad variant (default: False).
        maximize: maximize the objective instead of minimizing it (default: False).
        decoupled_weight_decay: AdamW's decoupled weight decay (default: False).

    Example:
        >>> opt = ember.optim.Adam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        check_nonnegative(weight_decay=weight_decay)
        _fused.check_options(fused, foreach, differentiable)
        defaults = {
            "lr": lr,
            "betas": tuple(scalar(beta) for beta in betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        if fused:
            self._step_supports_amp_scaling = True  # GradScaler passes grad_scale/found_inf

    def _state_for(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            state["step"] = 0.0
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_avg_sq"] = ember.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            if group["fused"] or _multi_tensor(group):
                self._fused_step(group)
                continue
            lr = scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps = group["eps"]
            amsgrad = group["amsgrad"]
            weight_decay = group["weight_decay"]
            # AdamW shrinks the parameters instead of adding the decay to the gradient.
            shrink = 1 - lr * weight_decay if group["decoupled_weight_decay"] else 1
            l2 = weight_decay if shrink == 1 else 0
            for p, grad in grads_of(group, l2):
                state = self._state_for(p, amsgrad)
                step = advance_step(state)
                if shrink != 1:
                    p.mul_(shrink)
                exp_avg = state["exp_avg"]
                exp_avg_sq = state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if amsgrad:
                    exp_avg_sq = state["max_exp_avg_sq"].maximum_(exp_avg_sq)
                step_size = lr / (1 - beta1**step)
                # One fresh tensor for the denominator; PyTorch's (sqrt(v) / c).add_(eps) rounds
                # the same way but allocates twice.
                denom = exp_avg_sq.sqrt().div_((1 - beta2**step) ** 0.5).add_(eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)
        return loss

    def _fused_step(self, group) -> None:
        """One ``_fused_adam_``/``_fused_adamw_`` call per device and dtype (PyTorch's
        ``_fused_adam``): step counters are tensors, incremented before the call by one
        ``_foreach_add_``. Also the multi-tensor path of ``foreach`` (see ``_multi_tensor``)."""
        amsgrad = group["amsgrad"]
        lists = ([], [], [], [], [], [])
        for p in group["params"]:
            if p.grad is None:
                continue
            _fused.check_param(p)
            state = self.state[p]
            if not state:
                state["step"] = _fused.step_tensor(p)
                state["exp_avg"] = ember.zeros_like(p)
                state["exp_avg_sq"] = ember.zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = ember.zeros_like(p)
            elif not isinstance(state["step"], ember.Tensor):  # loaded from a non-fused run
                state["step"] = _fused.step_tensor(p).add_(state["step"])
            row = (p, p.grad, state["exp_avg"], state["exp_avg_sq"])
            row += (state.get("max_exp_avg_sq"), state["step"])
            for target, item in zip(lists, row):
                target.append(item)
        op = ember._fused_adamw_ if group["decoupled_weight_decay"] else ember._fused_adam_
        beta1, beta2 = group["betas"]
        for params, grads, avgs, sqs, maxes, steps in _fused.groups(*lists):
            grad_scale, found_inf = _fused.amp_args(self, params[0].device)
            ember._foreach_add_(steps, 1)
            op(params, grads, avgs, sqs, maxes if amsgrad else [], steps, lr=scalar(group["lr"]),
               beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"], eps=group["eps"],
               amsgrad=amsgrad, maximize=group["maximize"], grad_scale=grad_scale,
               found_inf=found_inf)  # fmt: skip
            if found_inf is not None:
                for s in steps:
                    s.sub_(found_inf.reshape(()))


def _multi_tensor(group) -> bool:
    """Whether a group without ``fused`` takes the multi-tensor path: ``foreach`` None (the
    default) or True, every parameter with a gradient real floating point, no
    ``differentiable``. It runs the ``_fused_adam_`` op too: PyTorch's foreach path is the same
    update in a handful of ``_foreach_*`` calls, and the op is one call per device and dtype
    (a device without its kernel runs the op's decomposition, an op per tensor). Trajectories
    match the per-tensor loop's to rounding (tests/optim/test_adam_multi_tensor.py)."""
    if group["foreach"] is False or group["differentiable"]:
        return False
    for p in group["params"]:
        if p.grad is not None and (not p.dtype.is_floating_point or p.dtype.is_complex):
            return False
    return True


class AdamW(Adam):
    """Implements AdamW (Adam with decoupled weight decay), like ``torch.optim.AdamW``.

    Same arguments as :class:`Adam`, except that ``weight_decay`` defaults to 1e-2 and is always
    decoupled: parameters are scaled by ``1 - lr·weight_decay`` before the Adam update.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
