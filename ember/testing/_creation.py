"""``make_tensor``: random test tensors with ``torch.testing.make_tensor``'s ranges and flags."""

from __future__ import annotations

import math

import numpy as np

import ember

_DEFAULT_FLOAT_RANGE = (-9.0, 9.0)


def _bounds(dtype, low, high):
    """PyTorch's defaults and clamping of ``low``/``high`` to what the dtype holds."""
    name = str(dtype).rsplit(".", 1)[-1]
    if dtype.is_floating_point:
        info = np.finfo(np.float32 if name == "bfloat16" else np.dtype(name))
        lowest, highest, default = float(info.min), float(info.max), _DEFAULT_FLOAT_RANGE
    else:
        info = np.iinfo(np.dtype(name))
        lowest, highest = int(info.min), int(info.max)
        default = (-9, 10) if info.min < 0 else (0, 10)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    for v, what in ((low, "low"), (high, "high")):
        if isinstance(v, float) and math.isnan(v):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {what}={v}")
    if low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    return max(low, lowest), min(high, highest)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):  # fmt: skip
    """A tensor of ``shape`` filled with random values, as ``torch.testing.make_tensor``.

    Floats are uniform in ``[low, high)`` (default ``[-9, 9)``), integers in ``[low, high)``
    (default ``[-9, 10)``, ``[0, 10)`` unsigned), bools are random; bounds are clamped to what the
    dtype holds. ``noncontiguous`` returns a strided view of the same values; ``exclude_zero``
    replaces zeros (by 1 for integers, by the dtype's ``tiny`` for floats).

    Raises:
        ValueError: ``low > high``, a NaN bound, or ``requires_grad`` on a non-float dtype.

    Example:
        >>> make_tensor(2, 3, dtype=ember.float32, device="cpu", low=0, high=1).shape
        ember.Size([2, 3])
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, ember.Size)):
        shape = tuple(shape[0])
    if requires_grad and not dtype.is_floating_point:
        raise ValueError(f"make_tensor: requires_grad=True is not supported for dtype {dtype}")
    if dtype == ember.bool:
        result = ember.randint(0, 2, shape, device=device).to(ember.bool)
    elif dtype.is_floating_point:
        low, high = _bounds(dtype, low, high)
        unit = ember.rand(shape, dtype=ember.float64, device=device)
        result = (unit * (high - low) + low).to(dtype)
    else:
        low, high = _bounds(dtype, low, high)
        result = ember.randint(math.ceil(low), math.ceil(high), shape, device=device).to(dtype)
    if exclude_zero:
        name = str(dtype).rsplit(".", 1)[-1]
        fill = 1 if not dtype.is_floating_point else float(
            np.finfo(np.float32 if name == "bfloat16" else np.dtype(name)).tiny)  # fmt: skip
        result = ember.where(result == 0, ember.full_like(result, fill), result)
    if noncontiguous and result.numel() > 1:  # same values, every other element of a buffer
        result = ember.repeat_interleave(result, 2, dim=-1)[..., ::2]
    if memory_format is not None:
        result = result.contiguous(memory_format=memory_format)
    if requires_grad:
        result.requires_grad_(True)
    return result
