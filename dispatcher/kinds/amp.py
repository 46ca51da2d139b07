"""Runners of GradScaler's two ops: argument checks (PyTorch's), then one kernel call.

``_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)``: the kernel gets the
whole list (one dtype, one device) and makes one pass over it, multiplying every element by
``inv_scale`` and setting ``found_inf`` to 1.0 when any is inf or NaN: one fused call per device
and dtype, not a kernel per gradient. ``kernel(found_inf, inv_scale, tensors)``; tensors are
contiguous (a strided one goes through a contiguous copy).

``_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
growth_interval)``: ``kernel(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
growth_interval)`` updates the scale and the tracker in place on the device.
"""

from __future__ import annotations

from ember import _dtype as dt
from ember._tensor import Tensor

UNSCALE = "_amp_foreach_non_finite_check_and_unscale_"


def _check_scalar(name: str, what: str, t, dtype, device_type: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}(): argument '{what}' must be Tensor, not {type(t).__name__}")
    if t._storage.device.type != device_type:
        raise RuntimeError(f"{name}: {what} must be a {device_type.upper()} tensor.")
    if t.numel() != 1:
        raise RuntimeError(f"{name}: {what} must be a 1-element tensor.")
    if t._dtype is not dtype:
        kind = {dt.float32: "a float", dt.int32: "an int"}[dtype]
        raise RuntimeError(f"{name}: {what} must be {kind} tensor (got {t._dtype.name}).")


def _check_grads(grads) -> tuple:
    """(device, dtype) shared by every tensor of ``grads``."""
    first = grads[0]
    for t in grads:
        if not isinstance(t, Tensor):
            raise TypeError(f"{UNSCALE}(): the list holds a {type(t).__name__}, not a Tensor")
        if t._storage.device is not first._storage.device or t._dtype is not first._dtype:
            raise RuntimeError(
                f"{UNSCALE}: every tensor must have the same device and dtype (got "
                f"{first._dtype.name} on {first.device} and {t._dtype.name} on {t.device}); "
                "group them first, as GradScaler does"
            )
        if not t._dtype.is_floating_point:
            raise RuntimeError(f'"{UNSCALE}" not implemented for {t._dtype.name}')
    return first._storage.device, first._dtype


def non_finite_check_and_unscale(op, grads, found_inf, inv_scale):
    grads = list(grads)
    if not grads:
        return None
    device, dtype = _check_grads(grads)
    _check_scalar(op.name, "found_inf", found_inf, dt.float32, device.type)
    _check_scalar(op.name, "inv_scale", inv_scale, dt.float32, device.type)
    kernel = op.kernel(device.type, dtype)
    if kernel is None:
        op.decomposition(grads, found_inf, inv_scale)
        return None
    packed = [t if t.is_contiguous() else t.contiguous() for t in grads]
    kernel(found_inf, inv_scale, packed)
    for t, done in zip(grads, packed):
        if done is not t:
            t.copy_(done)
    return None


def update_scale(op, scale, growth_tracker, found_inf, growth_factor, backoff_factor, interval):
    if not isinstance(scale, Tensor):
        raise TypeError(f"{op.name}(): argument 'self' must be Tensor, not {type(scale).__name__}")
    device_type = scale._storage.device.type
    _check_scalar(op.name, "growth_tracker", growth_tracker, dt.int32, device_type)
    _check_scalar(op.name, "current_scale", scale, dt.float32, device_type)
    _check_scalar(op.name, "found_inf", found_inf, dt.float32, device_type)
    kernel = op.kernel(device_type, dt.float32)
    args = (float(growth_factor), float(backoff_factor), int(interval))
    if kernel is None:
        op.decomposition(scale, growth_tracker, found_inf, *args)
    else:
        kernel(scale, growth_tracker, found_inf, *args)
    return scale
