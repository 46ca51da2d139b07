"""Muon: ``torch.optim.Muon``, momentum orthogonalized by a Newton-Schulz iteration, for 2-D
parameters (the hidden layers' weight matrices; embeddings, heads and biases go to AdamW)."""

from __future__ import annotations

import math

import ember

from .optimizer import Optimizer, run_closure, scalar

EPS = 1e-7
DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_NS_STEPS = 5
ADJUST_LR_FNS = ("original", "match_rms_adamw")


def zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """PyTorch's quintic Newton-Schulz iteration in bfloat16: roughly ``U S' V^T`` of
    ``grad = U S V^T`` with ``S'`` near 1 (not exactly ``U V^T``, by design of the coefficients)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    ortho = grad.bfloat16()
    if tall:
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = ortho @ ortho.T
        gram_update = ember.addmm(gram, gram, gram, beta=b, alpha=c)
        ortho = ember.addmm(ortho, gram_update, ortho, beta=a)
    return ortho.T if tall else ortho


def adjusted_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    """The step size that gives updates of every matrix shape the same RMS: Keller Jordan's
    ``sqrt(max(1, A/B))`` ("original") or Moonshot's ``0.2 sqrt(max(A, B))`` (AdamW's RMS)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Implements Muon, like ``torch.optim.Muon``.

    ``B ← μB + g`` (as ``lerp``); ``U ← lerp(g, B, μ)`` with nesterov, else ``B``;
    ``O ← NS(U)``; ``θ ← θ(1 - lr·λ) - adjusted_lr·O``.

    Args:
        params: 2-D parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-3).
        weight_decay: decoupled weight decay (default: 0.1).
        momentum: momentum factor (default: 0.95).
        nesterov: Nesterov-style update (default: True).
        ns_coefficients: the quintic's (a, b, c) (default: (3.4445, -4.7750, 2.0315)).
        eps: floor of the norm the update is divided by (default: 1e-7).
        ns_steps: Newton-Schulz iterations (default: 5).
        adjust_lr_fn: None/"original" or "match_rms_adamw" (see ``adjusted_lr``).

    Example:
        >>> opt = ember.optim.Muon([layer.weight for layer in hidden_layers], lr=0.02)
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = DEFAULT_NS_COEFFICIENTS,
        eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS,
        adjust_lr_fn: str | None = None,
    ) -> None:
        if isinstance(lr, ember.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        for what, value in (("Learning rate", lr), ("momentum", momentum)):
            if not value >= 0.0:
                raise ValueError(f"{what} should be >= 0 but is: {value}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()}"
                    )

    def step(self, closure=None):
        """Perform a single optimization step (``closure`` re-evaluates the model)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            self._update_group(group)
        return loss

    def _update_group(self, group) -> None:
        lr, momentum = scalar(group["lr"]), group["momentum"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = ember.zeros_like(grad)
            buf = state["momentum_buffer"].lerp_(grad, 1 - momentum)
            update = grad.lerp(buf, momentum) if group["nesterov"] else buf
            update = zeropower_via_newtonschulz(
                update, group["ns_coefficients"], group["ns_steps"], group["eps"]
            )
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update, alpha=-adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
