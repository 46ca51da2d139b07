"""The learning-rate scheduler base class and the helpers every scheduler shares."""

from __future__ import annotations

import warnings
from typing import Any

from ember._tensor import Tensor

from .optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available."
)


def copy_value(value):
    return value.clone() if isinstance(value, Tensor) else value


def group_values(optimizer: Optimizer, key: str) -> list:
    """``group[key]`` of every group (tensors copied, so callers can't alias them)."""
    return [copy_value(group[key]) for group in optimizer.param_groups]


def set_group_value(group: dict, key: str, value) -> None:
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def per_group(name: str, optimizer: Optimizer, value) -> list:
    """One value per parameter group, from a scalar or a list of the groups' length."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has "
                f"{len(value)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return [copy_value(v) for v in value]
    return [copy_value(value) for _ in optimizer.param_groups]


def check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class of the learning-rate schedulers, like ``torch.optim.lr_scheduler.LRScheduler``.

    Subclasses implement ``get_lr()`` (the chainable rule from the groups' current lrs) and
    optionally ``_get_closed_form_lr()`` (used by the deprecated ``step(epoch)``).

    Args:
        optimizer: the optimizer whose learning rates are scheduled.
        last_epoch: index of the last epoch; -1 (default) starts the schedule. Other values
            resume one and require ``initial_lr`` in every group (from a loaded state).
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", copy_value(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                        "scheduler with last_epoch >= 0 (load the optimizer's state first)"
                    )
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates set by the last ``step()``, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next learning rates (called by ``step()``; use ``get_last_lr()`` to read them)."""
        raise NotImplementedError

    def _warn_if_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one step (call it after ``optimizer.step()``).

        Args:
            epoch: deprecated; sets ``last_epoch`` and uses the closed form where there is one.
        """
        if self._step_count == 1 and not self.optimizer._opt_called:
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. You should "
                "call them in the opposite order: `optimizer.step()` before "
                "`lr_scheduler.step()`. Failure to do this will result in skipping the first "
                "value of the learning rate schedule.",
                UserWarning,
                stacklevel=2,
            )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            set_group_value(group, "lr", lr)
        self._last_lr = group_values(self.optimizer, "lr")

    def _current(self) -> list:
        return group_values(self.optimizer, "lr")

    def _scaled(self, factor) -> list:
        return [group["lr"] * factor for group in self.optimizer.param_groups]
