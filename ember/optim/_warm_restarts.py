"""CosineAnnealingWarmRestarts: SGDR's cosine annealing with periodic restarts."""

from __future__ import annotations

import math

from ._scheduler import LRScheduler, group_values, set_group_value
from .optimizer import Optimizer


class CosineAnnealingWarmRestarts(LRScheduler):
    """Anneals each group's lr along a cosine from its initial lr to ``eta_min`` over ``T_i``
    epochs, then restarts, with ``T_i`` growing by ``T_mult`` each restart, like
    ``torch.optim.lr_scheduler.CosineAnnealingWarmRestarts``. ``step(epoch)`` takes
    fractional epochs (``epoch + batch / batches``).

    Args:
        optimizer: the optimizer.
        T_0: epochs until the first restart (a positive int).
        T_mult: factor by which ``T_i`` grows after each restart (an int >= 1, default: 1).
        eta_min: minimum learning rate (default: 0).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,  # noqa: N803 - PyTorch's names
        T_mult: int = 1,  # noqa: N803
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        cosine = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance by one epoch, or jump to ``epoch`` (which may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            self._jump_to(epoch)
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")

    def _jump_to(self, epoch) -> None:
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        if epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # The restart n whose period contains epoch: T_0(T_mult^n - 1)/(T_mult - 1) <= epoch.
            n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** (n)
