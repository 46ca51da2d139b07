"""``ember.cuda.amp`` and ``ember.cpu.amp``: PyTorch's older spellings, kept working with the
FutureWarning PyTorch gives (``torch.cuda.amp.GradScaler(enabled=False)`` in nanoGPT's train.py
must construct on a machine without CUDA).
"""

from __future__ import annotations

import functools
import sys
import types
import warnings

from .. import _dtype as dt
from . import autocast_mode
from .grad_scaler import GradScaler as _GradScaler

# The device types PyTorch has an ``amp`` submodule for, and their autocast default dtype.
DEVICE_TYPES = {"cuda": dt.float16, "cpu": dt.bfloat16}
_MODULES: dict = {}


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"`ember.{old}(args...)` is deprecated. Please use `ember.{new}` instead.",
        FutureWarning,
        stacklevel=3,
    )


def _autocast_class(device_type: str, default_dtype):
    class autocast(autocast_mode.autocast):  # noqa: N801 - PyTorch's name
        __doc__ = f"``ember.amp.autocast('{device_type}', ...)`` under its deprecated name."

        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True):
            _warn(f"{device_type}.amp.autocast", f"amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    autocast.__module__ = f"ember.{device_type}.amp"
    autocast.__qualname__ = "autocast"  # pickle finds it as ember.<device>.amp.autocast
    return autocast


def _grad_scaler_class(device_type: str):
    class GradScaler(_GradScaler):
        __doc__ = f"``ember.amp.GradScaler('{device_type}', ...)`` under its deprecated name."

        def __init__(
            self,
            init_scale: float = 2.0**16,
            growth_factor: float = 2.0,
            backoff_factor: float = 0.5,
            growth_interval: int = 2000,
            enabled: bool = True,
        ) -> None:
            _warn(f"{device_type}.amp.GradScaler", f"amp.GradScaler('{device_type}', args...)")
            super().__init__(
                device_type,
                init_scale=init_scale,
                growth_factor=growth_factor,
                backoff_factor=backoff_factor,
                growth_interval=growth_interval,
                enabled=enabled,
            )

    GradScaler.__module__ = f"ember.{device_type}.amp"
    GradScaler.__qualname__ = "GradScaler"
    return GradScaler


def _custom_fwd(fwd=None, *, cast_inputs=None):
    _warn("cuda.amp.custom_fwd", "amp.custom_fwd(args..., device_type='cuda')")
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda")(
        fwd=fwd, cast_inputs=cast_inputs
    )


def _custom_bwd(bwd):
    _warn("cuda.amp.custom_bwd", "amp.custom_bwd(args..., device_type='cuda')")
    return functools.partial(autocast_mode.custom_bwd, device_type="cuda")(bwd)


def module(device_type: str) -> types.ModuleType | None:
    """The ``ember.<device_type>.amp`` module (None for device types PyTorch has none for),
    also importable as ``import ember.cuda.amp``."""
    if device_type not in DEVICE_TYPES:
        return None
    found = _MODULES.get(device_type)
    if found is None:
        name = f"ember.{device_type}.amp"
        found = types.ModuleType(name, f"Deprecated spellings of ember.amp for {device_type}.")
        found.autocast = _autocast_class(device_type, DEVICE_TYPES[device_type])
        found.GradScaler = _grad_scaler_class(device_type)
        if device_type == "cuda":
            found.custom_fwd = _custom_fwd
            found.custom_bwd = _custom_bwd
        _MODULES[device_type] = sys.modules[name] = found
    return found
