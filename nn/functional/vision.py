"""pad (constant, reflect, replicate, circular) and interpolate (nearest, linear, bilinear)."""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS


def _pad_index(size: int, before: int, after: int, mode: str, device):
    positions = ember.arange(-before, size + after, device=device)
    if mode == "replicate":
        return ember.clamp(positions, 0, size - 1)
    if mode == "circular":
        return positions % size
    if mode == "reflect":
        if before >= size or after >= size:
            raise RuntimeError(
                f"pad(reflect): padding ({before}, {after}) should be smaller than the input size "
                f"({size})"
            )
        period = 2 * (size - 1) if size > 1 else 1
        folded = positions.abs() % period
        return ember.where(folded >= size, period - folded, folded)
    raise NotImplementedError(f"pad: mode '{mode}' is not supported")


def pad(input, pad, mode: str = "constant", value=None):
    """Pad the last ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)``."""
    if mode == "constant":
        return OPS["constant_pad_nd"](input, tuple(pad), 0 if value is None else value)
    out = input
    for i in range(len(pad) // 2):
        dim = input.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if before or after:
            index = _pad_index(input.shape[dim], before, after, mode, input.device)
            out = out.index_select(dim, index)
    return out


def _output_size(input, size, scale_factor, spatial: int):
    if size is not None:
        return (size,) * spatial if isinstance(size, int) else tuple(size)
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    factors = (scale_factor,) * spatial if isinstance(scale_factor, (int, float)) else scale_factor
    return tuple(int(s * f) for s, f in zip(input.shape[2:], factors))


def _source_coords(out_size, in_size, align_corners, scale, device, dtype):
    dst = ember.arange(out_size, device=device, dtype=dtype)
    if align_corners:
        step = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return dst * step
    ratio = in_size / out_size if scale is None else 1.0 / scale
    return ember.clamp((dst + 0.5) * ratio - 0.5, min=0.0)


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims (after N, C) with 'nearest', 'linear' or 'bilinear'."""
    spatial = input.ndim - 2
    out_size = _output_size(input, size, scale_factor, spatial)
    scales = (None,) * spatial
    if scale_factor is not None and size is None and not recompute_scale_factor:
        scales = (
            (scale_factor,) * spatial
            if isinstance(scale_factor, (int, float))
            else tuple(scale_factor)
        )
    out = input
    for i, (target, scale) in enumerate(zip(out_size, scales)):
        dim = 2 + i
        in_size = input.shape[dim]
        if mode in ("nearest", "nearest-exact"):
            ratio = in_size / target if scale is None else 1.0 / scale
            offset = 0.5 if mode == "nearest-exact" else 0.0
            src = ember.floor(
                (ember.arange(target, device=input.device, dtype=ember.float64) + offset) * ratio
            ).to(ember.int64)
            out = out.index_select(dim, ember.clamp(src, max=in_size - 1))
        elif mode in ("linear", "bilinear", "trilinear"):
            coords = _source_coords(
                target, in_size, align_corners, scale, input.device, input.dtype
            )
            low = ember.floor(coords).to(ember.int64).clamp(max=in_size - 1)
            high = (low + 1).clamp(max=in_size - 1)
            frac = (coords - low.to(input.dtype)).view([-1] + [1] * (input.ndim - 1 - dim))
            out = out.index_select(dim, low) * (1 - frac) + out.index_select(dim, high) * frac
        else:
            raise NotImplementedError(f"interpolate: mode '{mode}' is not supported")
    return out
