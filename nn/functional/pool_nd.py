"""3-D and LP pooling and the adaptive pools pooling.py lacks: max_pool3d (with PyTorch's flat
indices) and avg_pool3d as two passes of the 2-D pooling rows (max and sum are separable),
LP pooling as PyTorch's average-based formula, adaptive 3-D averages as one averaging matrix
per dim, adaptive maxima over gathered windows. Compositions of table ops, so every device
runs them and autograd derives their gradients.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import ember
from ember.dispatcher.kinds.window import check_output_size
from ember.dispatcher.optable import OPS

from .activation import relu
from .conv import _batch
from .pooling import (
    _adaptive_edges,
    _adaptive_size,
    _geometry,
    _result,
    _window_counts,
    average,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
    pooled_into,
)


def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode):
    """Max over (kD, kH, kW) windows as two passes of the max_pool2d kernel (a max is
    separable): (kH, kW) over every depth plane, then (kD, 1) over (D, H_out * W_out); the
    flat D*H*W index of each pick is its plane's 2-D index plus its depth times H*W."""
    x, batched = _batch("max_pool3d", input, 3)
    kernel, stride, padding, dilation = _geometry(
        "max_pool3d", 3, kernel_size, stride, padding, dilation
    )
    n, c, depth, height, width = x.shape
    planes = x.reshape(n * c * depth, 1, height, width)
    values, plane_index = OPS["max_pool2d_with_indices"](
        planes, kernel[1:], stride[1:], padding[1:], dilation[1:], ceil_mode
    )
    out_h, out_w = values.shape[-2:]
    columns = values.reshape(n * c, 1, depth, out_h * out_w)
    values, picked = OPS["max_pool2d_with_indices"](
        columns, (kernel[0], 1), (stride[0], 1), (padding[0], 0), (dilation[0], 1), ceil_mode
    )
    out_d = values.shape[2]
    check_output_size("max_pool3d", x.shape, (out_d, out_h, out_w))
    plane = picked // (out_h * out_w)  # the depth each pick came from
    within = plane_index.reshape(n * c, 1, depth, out_h * out_w).gather(2, plane)
    indices = (plane * (height * width) + within).reshape(n, c, out_d, out_h, out_w)
    values = values.reshape(n, c, out_d, out_h, out_w)
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def max_pool3d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """Max over sliding windows of (N, C, D, H, W) (or unbatched), with flat D*H*W indices."""
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    values, indices = max_pool3d_with_indices(
        input, kernel_size, stride, padding, dilation, ceil_mode
    )
    return _result(values, indices, return_indices)


def max_pool1d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
    *,
    out=None,
):
    """Average over sliding windows of (N, C, D, H, W); PyTorch's divisor rules. The window
    sums are separable: avg_pool2d's sums (divisor 1) over (H, W), then over (D, 1)."""
    return pooled_into(
        "avg_pool3d",
        out,
        input,
        lambda: _avg_pool3d(
            input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
        ),
    )


def _avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor):
    x, batched = _batch("avg_pool3d", input, 3)
    kernel, stride, padding, _ = _geometry("avg_pool3d", 3, kernel_size, stride, padding)
    if divisor == 0:
        raise RuntimeError("avg_pool3d: divisor must be not zero")
    n, c, depth, height, width = x.shape
    sums = _sums2d(x.reshape(n * c * depth, 1, height, width), kernel[1:], stride[1:],
                   padding[1:], ceil_mode)  # fmt: skip
    out_h, out_w = sums.shape[-2:]
    sums = _sums2d(sums.reshape(n * c, 1, depth, out_h * out_w), (kernel[0], 1),
                   (stride[0], 1), (padding[0], 0), ceil_mode)  # fmt: skip
    sums = sums.reshape(n, c, sums.shape[2], out_h, out_w)
    check_output_size("avg_pool3d", x.shape, tuple(sums.shape[2:]))
    if not divisor:
        divisor = _divisors(
            tuple(x.shape[2:]), kernel, stride, padding, ceil_mode, count_include_pad, x
        )
    result = average(sums, divisor)
    return result if batched else result.squeeze(0)


def _sums2d(x, kernel, stride, padding, ceil_mode):
    """Window sums of (B, 1, H, W): avg_pool2d with a divisor of 1."""
    return avg_pool2d(x, kernel, stride, padding, ceil_mode, True, 1)


def _divisors(sizes, kernel, stride, padding, ceil_mode, count_include_pad, x):
    """The per-window cell counts, an outer product of the per-dim counts."""
    counts = [
        _window_counts(n, k, s, p, ceil_mode, count_include_pad)
        for n, k, s, p in zip(sizes, kernel, stride, padding)
    ]
    grid = np.multiply.outer(np.multiply.outer(counts[0], counts[1]), counts[2])
    return ember.tensor(grid, dtype=x.dtype, device=x.device)


def _lp_pool(avg, max_pool, input, norm_type, kernel_size, stride, ceil_mode, n):
    """PyTorch's LP pool: (sum x^p)^(1/p) over windows, as an average times the window size;
    p = +-inf is a max (min) of |x|."""
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    cells = kernel_size**n if isinstance(kernel_size, int) else math.prod(kernel_size)
    if stride is not None:
        out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (ember.sign(out) * relu(ember.abs(out))).mul(cells).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool1d, max_pool1d, input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool2d, max_pool2d, input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool3d, max_pool3d, input, norm_type, kernel_size, stride, ceil_mode, 3)


@functools.lru_cache(maxsize=128)
def _averaging(size: int, out: int, device: str, dtype):
    """(out, size) matrix averaging each of PyTorch's adaptive windows along one dim."""
    starts, ends = _adaptive_edges(size, out)
    matrix = np.zeros((out, size))
    for i, (s, e) in enumerate(zip(starts, ends)):
        matrix[i, s:e] = 1.0 / (e - s)
    return ember.tensor(matrix, device=device).to(dtype)


def adaptive_avg_pool3d(input, output_size):
    """Adaptive averages over (N, C, D, H, W): separable, one averaging matrix per dim."""
    x, batched = _batch("adaptive_avg_pool3d", input, 3)
    sizes = _adaptive_size("adaptive_avg_pool3d", output_size, x, 3)
    out = x
    for i, target in enumerate(sizes):
        dim = 2 + i
        matrix = _averaging(x.shape[dim], target, str(x.device), x.dtype)
        out = OPS["matmul"](matrix, out.movedim(dim, -2)).movedim(-2, dim)
    return out if batched else out.squeeze(0)


@functools.lru_cache(maxsize=128)
def _adaptive_positions(size: int, out: int, device: str):
    """(out, longest) positions of each adaptive window, short ones padded by repeating
    their last position (harmless for a max; the first maximum still wins)."""
    starts, ends = _adaptive_edges(size, out)
    longest = max(e - s for s, e in zip(starts, ends))
    rows = [[min(s + j, e - 1) for j in range(longest)] for s, e in zip(starts, ends)]
    return ember.tensor(rows, dtype=ember.int64, device=device)


def _adaptive_max_nd(op, n, input, output_size):
    x, batched = _batch(op, input, n)
    sizes = _adaptive_size(op, output_size, x, n)
    lead = tuple(x.shape[:2])
    if not all(sizes):
        shape = lead + tuple(sizes)
        empty = ember.zeros(shape, dtype=x.dtype, device=x.device)
        values, indices = empty, ember.zeros(shape, dtype=ember.int64, device=x.device)
    else:
        positions = [_adaptive_positions(x.shape[2 + i], sizes[i], str(x.device)) for i in range(n)]
        picked = x
        for i, pos in enumerate(positions):
            picked = picked.index_select(2 + i, pos.reshape(-1))
        widths = [p.shape[1] for p in positions]
        split = [v for i in range(n) for v in (sizes[i], widths[i])]
        order = [*range(2), *(2 + 2 * i for i in range(n)), *(3 + 2 * i for i in range(n))]
        windows = picked.view(*lead, *split).permute(*order)
        values, local = windows.reshape(*lead, *sizes, math.prod(widths)).max(-1)
        indices = _adaptive_flat(local, positions, widths, x.shape[2:])
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def _adaptive_flat(local, positions, widths, sizes):
    """Flat input positions of the picks ``local`` (indices into each flattened window)."""
    n = len(positions)
    flat, rest = None, local
    coords = []
    for i in reversed(range(n)):
        offset = rest % widths[i]
        rest = rest // widths[i]
        shape = [1] * n
        shape[i] = positions[i].shape[0]
        table = positions[i]  # (out_i, width_i)
        index = ember.arange(positions[i].shape[0], device=local.device).view(shape)
        coords.append(table[index, offset])
    for i, coord in enumerate(reversed(coords)):
        flat = coord if flat is None else flat * sizes[i] + coord
    return flat


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: {list(input.shape)}"
        )
    size = output_size if isinstance(output_size, int) else output_size[0]
    return _adaptive_max_nd("adaptive_max_pool1d", 1, input, (size,))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    values, indices = adaptive_max_pool1d_with_indices(input, output_size)
    return _result(values, indices, return_indices)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_nd("adaptive_max_pool3d", 3, input, output_size)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    values, indices = adaptive_max_pool3d_with_indices(input, output_size)
    return _result(values, indices, return_indices)
