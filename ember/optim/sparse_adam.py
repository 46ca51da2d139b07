"""SparseAdam: ``torch.optim.SparseAdam``'s interface.

ember has no sparse tensors, so every gradient is dense and ``step`` refuses with PyTorch's
own error for a dense gradient; use :class:`ember.optim.Adam` instead.
"""

from __future__ import annotations

from .optimizer import Optimizer, check_betas, check_nonnegative, run_closure


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: Adam for sparse gradients (lazy moment updates).

    ember has no sparse tensors: gradients are always dense, and ``step`` raises PyTorch's
    ``RuntimeError("SparseAdam does not support dense gradients, please consider Adam
    instead")`` for any parameter that has a gradient. The constructor validates its
    arguments and parameters as PyTorch's does, so code written for torch fails the same way.

    Args:
        params: parameters to optimize, or parameter groups (dicts).
        lr: learning rate (default: 1e-3).
        betas: coefficients of the running averages (default: (0.9, 0.999)).
        eps: term added to the denominator for numerical stability (default: 1e-8).
        maximize: maximize the objective instead of minimizing it (default: False).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        maximize: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        complex_params = [
            [index, p_index]
            for index, group in enumerate(self.param_groups)
            for p_index, p in enumerate(group["params"])
            if p.is_complex()
        ]
        if complex_params:
            raise ValueError(
                f"Complex params at indices {complex_params}: SparseAdam does not support "
                "complex parameters"
            )

    def step(self, closure=None):
        """Refuse: ember's gradients are dense (PyTorch's error for a dense gradient)."""
        loss = run_closure(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError(
                        "SparseAdam does not support dense gradients, please consider Adam instead"
                    )
        return loss
