"""Resampling along one dim as an (out, in) weight matrix: bicubic interpolation (PyTorch's
cubic convolution, A = -0.75, taps clamped at the edges) and the anti-aliased bilinear and
bicubic filters (PIL's, as PyTorch's antialias=True: the filter widened by the downscale
factor, weights normalised per output). Applying a matrix is one matmul along the dim, and
its gradient is autograd's; the matrices depend on the sizes only and are cached."""

from __future__ import annotations

import functools
import math

import numpy as np

import ember

_CUBIC_A = -0.75  # PyTorch's bicubic interpolation
_AA_CUBIC_A = -0.5  # PIL's (and PyTorch's antialias) bicubic filter


def _scale(in_size: int, out_size: int, align_corners: bool, scale) -> float:
    """PyTorch's area_pixel_compute_scale: output-to-input step."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _cubic(t: float, a: float):
    """Weights of taps -1, 0, 1, 2 at fraction t (cubic convolution with parameter a)."""

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _bicubic_matrix(in_size, out_size, align_corners, scale):
    step = _scale(in_size, out_size, align_corners, scale)
    matrix = np.zeros((out_size, in_size))
    for i in range(out_size):
        source = step * i if align_corners else step * (i + 0.5) - 0.5  # not clamped (cubic)
        start = math.floor(source)
        for k, weight in enumerate(_cubic(source - start, _CUBIC_A)):
            matrix[i, min(max(start - 1 + k, 0), in_size - 1)] += weight
    return matrix


def _aa_filter(mode: str):
    if mode == "bilinear":
        return lambda x: max(0.0, 1.0 - abs(x)), 2
    a = _AA_CUBIC_A

    def cubic(x):
        x = abs(x)
        if x < 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        if x < 2:
            return (((x - 5) * x + 8) * x - 4) * a
        return 0.0

    return cubic, 4


def _antialias_matrix(in_size, out_size, align_corners, scale, mode):
    """PyTorch's _compute_indices_weights_aa: a filter of support interp_size / 2 (times the
    scale when downsampling) around each output's centre in input coordinates."""
    step = _scale(in_size, out_size, align_corners, scale)
    filter_fn, interp_size = _aa_filter(mode)
    support = interp_size * 0.5 * step if step >= 1.0 else interp_size * 0.5
    inverse = 1.0 / step if step >= 1.0 else 1.0
    matrix = np.zeros((out_size, in_size))
    for i in range(out_size):
        centre = step * (i + 0.5)
        low = max(int(centre - support + 0.5), 0)
        high = min(int(centre + support + 0.5), in_size)
        weights = [filter_fn((j + low - centre + 0.5) * inverse) for j in range(high - low)]
        total = sum(weights)
        if total:
            matrix[i, low:high] = np.array(weights) / total
    return matrix


@functools.lru_cache(maxsize=128)
def resample_matrix(in_size, out_size, mode, align_corners, scale, antialias, device, dtype):
    """The (out, in) matrix resampling one dim."""
    if antialias:
        matrix = _antialias_matrix(in_size, out_size, align_corners, scale, mode)
    else:
        matrix = _bicubic_matrix(in_size, out_size, align_corners, scale)
    return ember.tensor(matrix, device=device).to(dtype)


def apply_along(x, dim: int, matrix):
    """``matrix`` (out, in) applied to dim ``dim`` of ``x``."""
    return ember.matmul(matrix, x.movedim(dim, -2)).movedim(-2, dim)
