"""Adafactor: ``torch.optim.Adafactor`` (factored second moments, relative step sizes)."""

from __future__ import annotations

import ember

from .optimizer import Optimizer, advance_step, grads_of, run_closure, scalar

# torch.finfo(dtype).eps, Adafactor's default eps1.
_MACHINE_EPS = {
    "float16": 0.0009765625,
    "bfloat16": 0.0078125,
    "float32": 1.1920928955078125e-07,
    "float64": 2.220446049250313e-16,
}


def _check(lr, beta2_decay, eps, d, weight_decay) -> None:
    if isinstance(lr, ember.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    checks = (
        (lr >= 0.0, f"Learning rate should be >= 0 but is: {lr}"),
        (beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
        (eps[0] is None or eps[0] >= 0.0, f"epsilon1 should be >= 0 but is: {eps[0]}"),
        (eps[1] >= 0.0, f"epsilon2 should be >= 0 but is: {eps[1]}"),
        (d >= 1.0, f"Clipping threshold d should be >= 1 but is: {d}"),
        (weight_decay >= 0.0, f"weight_decay should be >= 0 but is: {weight_decay}"),
    )
    for ok, message in checks:
        if not ok:
            raise ValueError(message)


class Adafactor(Optimizer):
    """Implements Adafactor, like ``torch.optim.Adafactor``.

    For a matrix (or a batch of them) the second moment is factored into a row and a column
    running mean of ``g²`` (``row_var``, ``col_var``) whose outer product over the row mean
    estimates it; vectors keep a full ``variance``. The running averages use
    ``1 - β2_t = t^beta2_decay``; the step is ``a = max(eps2, RMS(θ))·min(lr, 1/sqrt(t))``
    times ``g/sqrt(v̂)`` clipped to RMS ``d``. Weight decay is decoupled.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: the relative step size's cap (default: 1e-2).
        beta2_decay: decay rate of the second moment's averaging (default: -0.8).
        eps: (eps1, eps2): eps1 (default None: the dtype's machine epsilon) floors the
            variance estimate, eps2 floors the parameter RMS (default: (None, 1e-3)).
        d: clipping threshold of the update's RMS (default: 1.0).
        weight_decay: decoupled weight decay (default: 0.0).
        foreach: accepted for PyTorch compatibility (same update either way).
        maximize: maximize the objective instead of minimizing it (default: False).

    Example:
        >>> opt = ember.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        _check(lr, beta2_decay, eps, d, weight_decay)
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _state_for(self, p, grad) -> dict:
        state = self.state[p]
        if not state:
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            state["step"] = 0.0
            if grad.dim() > 1:
                state["row_var"] = grad.new_zeros((*grad.shape[:-1], 1))
                state["col_var"] = grad.new_zeros((*grad.shape[:-2], 1, grad.shape[-1]))
            else:
                state["variance"] = ember.zeros_like(grad)
        return state

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            lr = scalar(group["lr"])
            for p, grad in grads_of(group):
                state = self._state_for(p, grad)
                step = advance_step(state)
                eps1, eps2 = group["eps"]
                if eps1 is None:
                    eps1 = _MACHINE_EPS[p.dtype.name]
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * min(lr, step**-0.5)
                if group["weight_decay"] != 0:
                    p.mul_(1 - lr * group["weight_decay"])
                update = _variance_estimate(state, grad, step ** group["beta2_decay"], eps1)
                update = update.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
                p.add_(update, alpha=-alpha / denom)
        return loss


def _variance_estimate(state, grad, weight: float, eps1: float):
    """Update the running second moments with weight ``1 - β2_t`` and return ``v̂`` (fresh)."""
    if grad.dim() > 1:
        row_var, col_var = state["row_var"], state["col_var"]
        row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1]), weight)
        col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2]), weight)
        estimate = row_var @ col_var
        return estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    variance = state["variance"].lerp_(grad * grad, weight)
    return variance.clone()
