"""Stochastic weight averaging and EMA: ``torch.optim.swa_utils``.

:class:`AveragedModel` keeps a running average (SWA by default, or EMA through
:func:`get_ema_multi_avg_fn`/:func:`get_ema_avg_fn`) of a model's parameters, :class:`SWALR`
anneals the lr to a constant SWA lr, and :func:`update_bn` recomputes BatchNorm statistics
for the averaged weights with one pass over the data.
"""

from __future__ import annotations

import itertools
import math
from copy import deepcopy
from typing import Any

import ember
from ember.autograd import no_grad
from ember.nn import Module
from ember.nn.modules.normalization import _BatchNorm

from ._scheduler import LRScheduler, per_group
from .optimizer import float32

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range."
        )


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An EMA update over lists of tensors: ``ema ← decay·ema + (1-decay)·current``, in place
    (``lerp_`` for floating tensors, like PyTorch's ``_foreach_lerp_``)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _) -> None:
        with no_grad():
            if ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex():
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list, strict=True):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An SWA (equal-weight running mean) update over lists of tensors, in place."""

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        with no_grad():
            count = _count(num_averaged)
            if averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex():
                # PyTorch's weight 1/(n+1) is a float32 tensor (an int tensor's true division).
                weight = float32(1 / (count + 1))
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list, strict=True):
                    p_avg.add_((p_model - p_avg) / (count + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """An EMA update of one tensor: returns ``decay·ema + (1-decay)·current``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An SWA update of one tensor: returns ``avg + (current - avg)/(n + 1)``."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (_count(num_averaged) + 1)

    return swa_update


def _count(num_averaged) -> int:
    return int(num_averaged.item()) if isinstance(num_averaged, ember.Tensor) else num_averaged


class AveragedModel(Module):
    """A copy of ``model`` whose parameters are a running average of ``model``'s, like
    ``torch.optim.swa_utils.AveragedModel``; call ``update_parameters(model)`` after each
    optimizer step (or epoch). The first call copies the parameters.

    Args:
        model: the model to average (deep-copied).
        device: where to keep the averaged copy (default: ``model``'s devices).
        avg_fn: ``avg_fn(averaged, current, n_averaged) -> new average`` per tensor.
        multi_avg_fn: ``multi_avg_fn(averaged_list, current_list, n_averaged)`` updating in
            place, called once per (device, dtype) group, e.g. :func:`get_ema_multi_avg_fn`.
            Without either the average is SWA's equal-weight mean.
        use_buffers: average the buffers too (else they are copied from ``model``)
            (default: False).

    Example:
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
        >>> opt.step(); ema.update_parameters(model)
    """

    def __init__(
        self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n_averaged = ember.tensor(0, dtype=ember.int64)
        self.register_buffer("n_averaged", n_averaged if device is None else n_averaged.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """The averaged model's output."""
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module):
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        return [(p.detach(), q.detach().to(p.device)) for p, q in zip(mine, theirs, strict=False)]

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average."""
        with no_grad():
            pairs = self._pairs(model)
            if int(self.n_averaged.item()) == 0:
                for averaged, current in pairs:
                    averaged.copy_(current)
            elif self.avg_fn is not None:
                for averaged, current in pairs:
                    averaged.copy_(self.avg_fn(averaged, current, self.n_averaged))
            else:
                self._update_groups(pairs)
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1

    def _update_groups(self, pairs) -> None:
        """``multi_avg_fn`` (default SWA's) once per (device, dtype) group, as PyTorch."""
        groups: dict[tuple, tuple[list, list]] = {}
        for averaged, current in pairs:
            mine, theirs = groups.setdefault((str(averaged.device), averaged.dtype), ([], []))
            mine.append(averaged)
            theirs.append(current)
        multi_avg_fn = self.multi_avg_fn
        for (device, _), (mine, theirs) in groups.items():
            if multi_avg_fn is not None:
                multi_avg_fn(mine, theirs, self.n_averaged.to(device))
            else:
                # PyTorch's per-tensor SWA update where no foreach kernels are (its CPU path).
                avg_fn = get_swa_avg_fn()
                for averaged, current in zip(mine, theirs, strict=True):
                    averaged.copy_(avg_fn(averaged, current, self.n_averaged))


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute every BatchNorm's running statistics with one pass over ``loader``, like
    ``torch.optim.swa_utils.update_bn`` (cumulative averages: momentum ``None`` meanwhile).

    Args:
        loader: an iterable of batches (a list/tuple batch contributes its first element).
        model: the model whose BatchNorm layers are updated.
        device: move each batch there first (default: leave it).
    """
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to a fixed ``swa_lr`` over ``anneal_epochs`` epochs and holds
    it, like ``torch.optim.swa_utils.SWALR``.

    Args:
        optimizer: the optimizer.
        swa_lr: the SWA learning rate, one or one per group.
        anneal_epochs: epochs of the annealing (default: 10).
        anneal_strategy: ``"cos"`` or ``"linear"`` (default: ``"cos"``).
        last_epoch: index of the last epoch (default: -1).
    """

    def __init__(
        self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1
    ) -> None:
        for lr, group in zip(per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        self._warn_if_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # Recover the pre-annealing lr from the current one, then anneal it one step further.
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """The attributes, less the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()``."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
