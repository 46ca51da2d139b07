"""The eager kernels of the upsample rows (dispatcher/optable/upsample.py): one dim at a time,
nearest as a gather, linear as two gathers and a lerp, bicubic as an (out, in) matrix
(``_resample``). The source coordinates are PyTorch's (area_pixel_compute_source_index): the
given scale when ``scale_factor`` was passed, else in / out. The same coordinates give the
numpy references the op tests compare with."""

from __future__ import annotations

import functools
import math

import numpy as np

import ember

from ._resample import _bicubic_matrix, apply_along, resample_matrix


def _ratio(in_size, out_size, scale) -> float:
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


@functools.lru_cache(maxsize=256)
def nearest_source(out_size, in_size, scale, exact) -> tuple:
    """floor(dst * in/out), or floor((dst + 0.5) * in/out) for nearest-exact."""
    ratio, offset = _ratio(in_size, out_size, scale), 0.5 if exact else 0.0
    return tuple(min(math.floor((i + offset) * ratio), in_size - 1) for i in range(out_size))


@functools.lru_cache(maxsize=256)
def linear_source(out_size, in_size, align_corners, scale) -> tuple:
    """(low, high, frac): the two neighbours of each output and the weight of the second
    (half-pixel coordinates clamped at 0 unless ``align_corners``)."""
    if align_corners:
        step = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        coords = [i * step for i in range(out_size)]
    else:
        ratio = _ratio(in_size, out_size, scale)
        coords = [max((i + 0.5) * ratio - 0.5, 0.0) for i in range(out_size)]
    low = [min(math.floor(c), in_size - 1) for c in coords]
    high = [min(lo + 1, in_size - 1) for lo in low]
    return tuple(low), tuple(high), tuple(c - lo for c, lo in zip(coords, low))


def output_sizes(input_shape, output_size, scale_factors) -> tuple:
    """(sizes, scales) of the .vec form: exactly one of output_size and scale_factors."""
    spatial = len(input_shape) - 2
    if (output_size is None) == (scale_factors is None):
        raise RuntimeError("Must specify exactly one of output_size and scale_factors")
    if output_size is not None:
        return tuple(int(s) for s in output_size), (None,) * spatial
    scales = tuple(float(f) for f in scale_factors)
    if len(scales) != spatial:
        raise RuntimeError(
            f"It is expected scale_factors has {spatial} elements, but got {len(scales)} elements"
        )
    return tuple(math.floor(n * f) for n, f in zip(input_shape[2:], scales)), scales


def resize(input, output_size, scale_factors, mode: str, align_corners: bool = False):
    """Resample dims 2.. of ``input`` (mode: nearest, nearest-exact, linear or cubic)."""
    sizes, scales = output_sizes(tuple(input.shape), output_size, scale_factors)
    out, device = input, str(input.device)
    for dim, (target, scale) in enumerate(zip(sizes, scales), start=2):
        in_size = input.shape[dim]
        if mode in ("nearest", "nearest-exact"):
            index = nearest_source(target, in_size, scale, mode == "nearest-exact")
            out = out.index_select(dim, ember.tensor(index, dtype=ember.int64, device=device))
        elif mode == "cubic":
            matrix = resample_matrix(
                in_size, target, "bicubic", align_corners, scale, False, device, input.dtype
            )
            out = apply_along(out, dim, matrix)
        else:
            low, high, frac = linear_source(target, in_size, align_corners, scale)
            low = ember.tensor(low, dtype=ember.int64, device=device)
            high = ember.tensor(high, dtype=ember.int64, device=device)
            frac = ember.tensor(frac, dtype=input.dtype, device=device)
            frac = frac.view([-1] + [1] * (input.ndim - 1 - dim))
            start = out.index_select(dim, low)
            out = start + (out.index_select(dim, high) - start) * frac
    return out


def resize_np(input, output_size, scale_factors, mode: str, align_corners: bool = False):
    """numpy reference of :func:`resize` (float64 arithmetic, the input's dtype back)."""
    sizes, scales = output_sizes(input.shape, output_size, scale_factors)
    nearest = mode in ("nearest", "nearest-exact")
    out = input if nearest else input.astype(np.float64)
    for dim, (target, scale) in enumerate(zip(sizes, scales), start=2):
        in_size = input.shape[dim]
        if nearest:
            index = nearest_source(target, in_size, scale, mode == "nearest-exact")
            out = out.take(np.array(index, dtype=np.int64), axis=dim)
        elif mode == "cubic":
            matrix = _bicubic_matrix(in_size, target, align_corners, scale)
            out = np.moveaxis(np.tensordot(matrix, np.moveaxis(out, dim, 0), 1), 0, dim)
        else:
            low, high, frac = linear_source(target, in_size, align_corners, scale)
            frac = np.array(frac).reshape([-1] + [1] * (input.ndim - 1 - dim))
            start = out.take(np.array(low), axis=dim)
            out = start + (out.take(np.array(high), axis=dim) - start) * frac
    return out.astype(input.dtype)
