"""CyclicLR: the cyclical learning-rate policy (lr cycles between two bounds per batch)."""

from __future__ import annotations

import math
import types
from functools import partial
from typing import Any

from ._scheduler import LRScheduler, check_optimizer, per_group, set_group_value
from .optimizer import Optimizer


def _triangular_scale_fn(x: float) -> float:
    return 1.0


def _triangular2_scale_fn(x: float) -> float:
    return 1 / (2.0 ** (x - 1))


def _exp_range_scale_fn(gamma: float, x: float) -> float:
    return gamma**x


class CyclicLR(LRScheduler):
    """Cycles each group's lr between ``base_lr`` and ``max_lr``, like
    ``torch.optim.lr_scheduler.CyclicLR``; call ``step()`` after every batch. With
    ``cycle_momentum`` the momentum (or Adam's beta1) cycles inversely between
    ``max_momentum`` and ``base_momentum``.

    Args:
        optimizer: the optimizer.
        base_lr: lower lr bound, one or one per group (also the initial lr).
        max_lr: upper lr bound, one or one per group.
        step_size_up: iterations in the increasing half of a cycle (default: 2000).
        step_size_down: iterations in the decreasing half (default: ``step_size_up``).
        mode: ``"triangular"``, ``"triangular2"`` (amplitude halves every cycle) or
            ``"exp_range"`` (amplitude scaled by ``gamma**iteration``); ignored with
            ``scale_fn`` (default: ``"triangular"``).
        gamma: ``exp_range``'s constant (default: 1.0).
        scale_fn: custom amplitude scaling ``scale_fn(x)`` with ``0 <= scale_fn(x) <= 1``.
        scale_mode: whether ``scale_fn`` takes the cycle number (``"cycle"``) or the
            iteration (``"iterations"``) (default: ``"cycle"``).
        cycle_momentum: cycle the momentum inversely to the lr (default: True).
        base_momentum: lower momentum bound, one or one per group (default: 0.8).
        max_momentum: upper momentum bound, one or one per group (default: 0.9).
        last_epoch: index of the last batch (default: -1).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr,
        max_lr,
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn=None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum=0.8,
        max_momentum=0.9,
        last_epoch: int = -1,
    ) -> None:
        check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                set_group_value(group, "lr", lr)
        self.max_lrs = per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch) -> None:
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError(
                "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
            )
        self.use_beta1 = "betas" in optimizer.defaults
        self.base_momentums = per_group("base_momentum", optimizer, base_momentum)
        self.max_momentums = per_group("max_momentum", optimizer, max_momentum)
        if last_epoch == -1:
            for high, low, group in zip(
                self.max_momentums, self.base_momentums, optimizer.param_groups
            ):
                self._set_momentum(group, high)
                group["max_momentum"] = high
                group["base_momentum"] = low

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = _triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = _triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(_exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        """The amplitude scaling policy (the custom ``scale_fn`` or the mode's)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base + (high - base) * scale_factor * scale
            for base, high in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, low, high in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                self._set_momentum(group, high - (high - low) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes, less the scale function (a callable object's ``__dict__`` is kept;
        plain functions and lambdas can't be pickled)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()``."""
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()
