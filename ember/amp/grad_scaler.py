"""``ember.amp.GradScaler``: loss scaling for float16 training, as ``torch.amp.GradScaler``.

The loss is multiplied by a scale so that small float16 gradients do not flush to zero; before
the optimizer steps, the gradients are divided by it again. ``unscale_`` runs one fused
non-finite check and unscale per device and dtype (the op
``_amp_foreach_non_finite_check_and_unscale_``), ``step`` skips the optimizer when a gradient
is inf or NaN, and ``update`` grows or backs off the scale (``_amp_update_scale_``). The scale
and the growth tracker are tensors on the gradients' device, so nothing waits for the device
until ``step`` asks whether to skip.
"""

from __future__ import annotations

import warnings
from collections import abc, defaultdict
from enum import Enum

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd import no_grad
from ..dispatcher.optable import OPS
from .autocast_mode import cuda_available

__all__ = ["GradScaler", "OptState"]


class _MultiDeviceReplicator:
    """Lazily serves copies of a tensor to the devices that ask, one copy per device."""

    def __init__(self, master: Tensor):
        self.master = master
        self._per_device_tensors: dict = {}

    def get(self, device) -> Tensor:
        found = self._per_device_tensors.get(device)
        if found is None:
            found = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = found
        return found


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _full(value, dtype, device) -> Tensor:
    from .. import full

    return full((), value, dtype=dtype, device=device)


class GradScaler:
    """Scales the loss, unscales the gradients, skips steps with inf/NaN gradients, and adapts
    the scale.

    Args:
        device: device type of the gradients (``"cuda"``, ``"cpu"``, ``"xpu"``...).
        init_scale: the first scale factor.
        growth_factor: multiplies the scale after ``growth_interval`` steps without inf/NaN.
        backoff_factor: multiplies the scale after a step with inf/NaN gradients.
        growth_interval: consecutive unskipped steps before the scale grows.
        enabled: False makes every method a pass-through (``step`` just steps).

    Example:
        >>> scaler = ember.amp.GradScaler("cpu")
        >>> scaler.scale(loss).backward()
        >>> scaler.unscale_(opt)
        >>> ember.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        >>> scaler.step(opt)
        >>> scaler.update()
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not cuda_available():
            warnings.warn(
                "ember.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = (
            "This may indicate your script did not use scaler.scale(loss or outputs) earlier in "
            "the iteration."
        )
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = _full(self._init_scale, dt.float32, dev)
        self._growth_tracker = _full(self._init_growth_tracker, dt.int32, dev)

    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples of them) times the scale factor;
        unchanged when the scaler is disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)
        stash: list = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                return type(val)(iterable) if isinstance(val, (list, tuple)) else iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        """Unscale the optimizer's gradients: one fused call per device and dtype."""
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        grouped: dict = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(
                            f"expected param to be ember.Tensor, got {type(param).__name__}"
                        )
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype is dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grouped[grad.device][grad.dtype].append(grad)
            for device, per_dtype in grouped.items():
                for grads in per_dtype.values():
                    OPS["_amp_foreach_non_finite_check_and_unscale_"](
                        grads, per_device_found_inf.get(device), per_device_inv_scale.get(device)
                    )
        return per_device_found_inf._per_device_tensors

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale, in place, and note inf/NaN.

        Optional: ``step`` unscales when it was not done. Call it to work on true gradients
        between backward and ``step`` (gradient clipping); at most once per ``step``.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update()."
            )
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _full(0.0, dt.float32, self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(
            optimizer, inv_scale, found_inf, False
        )
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless ``unscale_`` did) and run ``optimizer.step(*args, **kwargs)`` when no
        gradient is inf or NaN; returns what it returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off the scale if a step was skipped, grow it after ``growth_interval`` clean
        steps, or set it to ``new_scale`` (a float or a one-element tensor). Call once per
        iteration, after every ``step``."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            found_infs = [
                found_inf.to(device=_scale.device, non_blocking=True)
                for state in self._per_optimizer_states.values()
                for found_inf in state["found_inf_per_device"].values()
            ]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf_combined = found_infs[0]
            for other in found_infs[1:]:
                found_inf_combined += other
            OPS["_amp_update_scale_"](
                _scale,
                _growth_tracker,
                found_inf_combined,
                self._growth_factor,
                self._backoff_factor,
                self._growth_interval,
            )
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _set_scale(self, new_scale) -> None:
        if isinstance(new_scale, float):
            self._scale.fill_(new_scale)
            return
        reason = "new_scale should be a float or a 1-element ember.Tensor with requires_grad=False."
        if new_scale.device.type != self._device:
            raise AssertionError(reason)
        if new_scale.numel() != 1:
            raise AssertionError(reason)
        if new_scale.requires_grad is True:
            raise AssertionError(reason)
        self._scale.copy_(new_scale)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            scale = self._get_scale_async()
            return self._init_scale if scale is None else scale.item()
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            tracker = self._growth_tracker
            return self._init_growth_tracker if tracker is None else tracker.item()
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (empty when disabled); take it after ``update``."""
        if self._enabled:
            return {
                "scale": self.get_scale(),
                "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker(),
            }
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict``; a no-op when disabled."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled "
                "instance of GradScaler."
            )
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError(
                    "A GradScaler instance may only be pickled at the beginning of an iteration, "
                    "or at the end after scaler.update()."
                )
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
