"""Learning-rate schedulers: ``torch.optim.lr_scheduler`` with the same names and semantics.

A scheduler rewrites ``group["lr"]`` of its optimizer's parameter groups. ``last_epoch`` counts
``step()`` calls: construction performs step 0 (``last_epoch`` goes from -1 to 0) and sets the
initial learning rates; call ``scheduler.step()`` after ``optimizer.step()``. The rules are
PyTorch's recursive (chainable) forms, so composed schedulers give the same sequences.
"""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from collections import Counter
from typing import Any

from ._cyclic import CyclicLR
from ._onecycle import OneCycleLR
from ._plateau import ReduceLROnPlateau
from ._scheduler import (
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    group_values,
    set_group_value,
)
from ._warm_restarts import CosineAnnealingWarmRestarts
from .optimizer import Optimizer


class _LambdaScheduler(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one callable per group; saves callable objects'
    ``__dict__`` (not plain functions or lambdas, which can't be pickled) in the state dict."""

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(
                    f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
                )
            self.lr_lambdas = list(lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """Sets each group's lr to its initial lr times ``lr_lambda(epoch)``.

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the epoch, or a list of them (one per group).
        last_epoch: index of the last epoch (default: -1).

    Example:
        >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95**epoch)
    """

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiplies each group's lr by ``lr_lambda(epoch)`` at every step (not at construction)."""

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial:
            return self._current()
        groups = self.optimizer.param_groups
        return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, groups)]


class StepLR(LRScheduler):
    """Decays each group's lr by ``gamma`` every ``step_size`` epochs.

    Args:
        optimizer: the optimizer.
        step_size: period of the decay, in epochs.
        gamma: multiplicative factor (default: 0.1).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current()
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Decays each group's lr by ``gamma`` at each milestone epoch (repeated ones compound).

    Args:
        optimizer: the optimizer.
        milestones: epoch indices.
        gamma: multiplicative factor (default: 0.1).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch not in self.milestones:
            return self._current()
        return self._scaled(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        decays = bisect_right(milestones, self.last_epoch)
        return [base * self.gamma**decays for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiplies the lr by ``factor`` until epoch ``total_iters``, then restores it.

    Args:
        optimizer: the optimizer.
        factor: the factor, in [0, 1] (default: 1/3).
        total_iters: number of epochs the factor applies (default: 5).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return self._scaled(self.factor)
        if self.last_epoch != self.total_iters:
            return self._current()
        return self._scaled(1.0 / self.factor)

    def _get_closed_form_lr(self) -> list:
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base * factor for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Changes the lr factor linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs.

    Args:
        optimizer: the optimizer.
        start_factor: factor at the first epoch, in (0, 1] (default: 1/3).
        end_factor: factor at the end, in [0, 1] (default: 1.0).
        total_iters: number of epochs of the ramp (default: 5).
        last_epoch: index of the last epoch (default: -1).

    Example:
        >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=10)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or equal "
                "to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return self._scaled(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        span = self.end_factor - self.start_factor
        previous = self.total_iters * self.start_factor + (self.last_epoch - 1) * span
        return self._scaled(1.0 + span / previous)

    def _get_closed_form_lr(self) -> list:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * done
        return [base * factor for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Decays each group's lr by ``gamma`` every epoch.

    Args:
        optimizer: the optimizer.
        gamma: multiplicative factor.
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial:
            return self._current()
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the lr with a polynomial of the given ``power`` to 0 over ``total_iters`` epochs.

    Args:
        optimizer: the optimizer.
        total_iters: number of epochs of the decay (default: 5).
        power: power of the polynomial (default: 1.0).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        now = 1.0 - self.last_epoch / self.total_iters
        before = 1.0 - (self.last_epoch - 1) / self.total_iters
        return self._scaled((now / before) ** self.power)

    def _get_closed_form_lr(self) -> list:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left**self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Anneals the lr along a cosine from the initial lr to ``eta_min`` over ``T_max`` epochs
    (and back up over the next ``T_max``: SGDR without restarts).

    Args:
        optimizer: the optimizer.
        T_max: half-period, in epochs.
        eta_min: minimum learning rate (default: 0).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_max: int,  # noqa: N803 - PyTorch's name
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        groups = self.optimizer.param_groups
        epoch, t_max, eta_min = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current()
        if self._step_count == 1 and epoch > 0:
            return [
                eta_min + (base - eta_min) * (1 + math.cos(epoch * math.pi / t_max)) / 2
                for base in self.base_lrs
            ]
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            return [
                group["lr"] + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                for base, group in zip(self.base_lrs, groups)
            ]
        ratio = (1 + math.cos(math.pi * epoch / t_max)) / (
            1 + math.cos(math.pi * (epoch - 1) / t_max)
        )
        return [ratio * (group["lr"] - eta_min) + eta_min for group in groups]

    def _get_closed_form_lr(self) -> list:
        cosine = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
        return [self.eta_min + (base - self.eta_min) * cosine for base in self.base_lrs]


class _Composite(LRScheduler):
    """Shared by SequentialLR and ChainedScheduler: validation and nested state dicts."""

    def _check_children(self, optimizer: Optimizer, schedulers) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        for i, scheduler in enumerate(schedulers):
            if not hasattr(scheduler, "optimizer"):
                raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
            if isinstance(scheduler, ReduceLROnPlateau):
                raise ValueError(
                    f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                    "additional kwargs to be specified when calling `step`, but got one at "
                    f"index {i} in the given schedulers sequence."
                )
            if optimizer is not scheduler.optimizer:
                raise ValueError(
                    f"{name} expects all schedulers to belong to the same optimizer, but got "
                    f"scheduler {type(scheduler).__name__} at index {i} with another optimizer."
                )

    def state_dict(self) -> dict[str, Any]:
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "_schedulers")
        }
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        children = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, children):
            scheduler.load_state_dict(saved)


class SequentialLR(_Composite):
    """Runs ``schedulers`` one after another, switching at the ``milestones`` epochs.

    Args:
        optimizer: the optimizer (shared by every scheduler).
        schedulers: the schedulers, in order.
        milestones: epochs where the next scheduler takes over (one fewer than schedulers).
        last_epoch: index of the last epoch (default: -1).

    Example:
        >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
        >>> decay = ExponentialLR(opt, gamma=0.9)
        >>> sched = SequentialLR(opt, schedulers=[warmup, decay], milestones=[5])
    """

    def __init__(
        self, optimizer: Optimizer, schedulers: list, milestones: list, last_epoch: int = -1
    ) -> None:
        self._check_children(optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than "
                f"the number of milestone points, but got number of schedulers {len(schedulers)} "
                f"and the number of milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The children already stepped once each at construction; undo that and restart the
        # first one, so the sequence begins where a lone first scheduler would.
        for group in optimizer.param_groups:
            set_group_value(group, "lr", group["initial_lr"])
        self._undo_initial_steps(self)
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def _undo_initial_steps(self, scheduler) -> None:
        if hasattr(scheduler, "_schedulers"):
            for child in scheduler._schedulers:
                self._undo_initial_steps(child)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        """Advance by one epoch, handing over to the next scheduler at a milestone."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Steps every scheduler in ``schedulers`` at each ``step()`` (their effects compose).

    Args:
        schedulers: the schedulers to chain.
        optimizer: their optimizer (default: the first scheduler's).
    """

    def __init__(self, schedulers, optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                "ChainedScheduler expects at least one scheduler to be chained, but got no "
                "scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        self._check_children(optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = group_values(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step every chained scheduler."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = group_values(self._schedulers[-1].optimizer, "lr")


__all__ = [
    "EPOCH_DEPRECATION_WARNING",
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]
