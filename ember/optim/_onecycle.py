"""OneCycleLR: the 1cycle policy (warm up to ``max_lr``, then anneal far below the start)."""

from __future__ import annotations

import math

from ._scheduler import LRScheduler, check_optimizer, per_group
from .optimizer import Optimizer


def _anneal_cos(start: float, end: float, pct: float) -> float:
    return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)


def _anneal_linear(start: float, end: float, pct: float) -> float:
    return (end - start) * pct + start


_ANNEAL = {"cos": _anneal_cos, "linear": _anneal_linear}


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict]:
    """(end step, group keys of the start/end lr and momentum) of each phase."""
    up = float(pct_start * total_steps) - 1
    last = total_steps - 1

    def phase(end_step, start_lr, end_lr, start_momentum, end_momentum):
        return {
            "end_step": end_step,
            "start_lr": start_lr,
            "end_lr": end_lr,
            "start_momentum": start_momentum,
            "end_momentum": end_momentum,
        }

    if three_phase:
        return [
            phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
            phase(2 * up, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
            phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
        ]
    return [
        phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
        phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum"),
    ]


class OneCycleLR(LRScheduler):
    """The 1cycle learning-rate policy, like ``torch.optim.lr_scheduler.OneCycleLR``; call
    ``step()`` after every batch. Momentum (or Adam's beta1) cycles inversely when
    ``cycle_momentum``.

    Args:
        optimizer: the optimizer.
        max_lr: peak learning rate, one or one per group.
        total_steps: number of steps in the cycle (or give ``epochs`` and ``steps_per_epoch``).
        epochs: number of epochs.
        steps_per_epoch: number of steps per epoch.
        pct_start: fraction of the cycle spent increasing the lr (default: 0.3).
        anneal_strategy: ``"cos"`` or ``"linear"`` (default: ``"cos"``).
        cycle_momentum: cycle the momentum between ``base_momentum`` and ``max_momentum``
            (default: True).
        base_momentum: lower momentum bound (default: 0.85).
        max_momentum: upper momentum bound (default: 0.95).
        div_factor: initial lr = max_lr / div_factor (default: 25).
        final_div_factor: minimum lr = initial lr / final_div_factor (default: 1e4).
        three_phase: annealing goes back to the initial lr before the minimum (default: False).
        last_epoch: index of the last step (default: -1).

    Example:
        >>> sched = OneCycleLR(opt, max_lr=0.1, total_steps=len(loader) * epochs)
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr,
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in _ANNEAL:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        self._anneal_func_type = anneal_strategy
        max_lrs = per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, peak in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            highs = per_group("max_momentum", optimizer, max_momentum)
            lows = per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for high, low, group in zip(highs, lows, optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        anneal = _ANNEAL[self._anneal_func_type]
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    break
                start_step = end_step
            lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct)
                self._set_momentum(group, momentum)
        return lrs


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError(
                f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
            )
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
