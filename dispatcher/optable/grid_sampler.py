"""grid_sample as PyTorch's aten rows (issue 20): ``grid_sampler_2d`` and ``grid_sampler_3d``
(interpolation and padding modes as at::native's ints: bilinear 0, nearest 1, bicubic 2; zeros 0,
border 1, reflection 2) and their backward rows, which return the input's gradient (None where
``output_mask[0]`` is false) and the grid's. One kernel call each where the backend has one (the
CPU's grid_sampler.c, float32 and float64); their decompositions (nn/functional/_grid_rows.py)
are the composite F.grid_sample ran before, for every other device and dtype. The forward rows'
formula calls the backward row (autograd/grid_formulas.py); the backward rows have none, so a
double backward differentiates their decomposition, as it did the composite.
"""

from __future__ import annotations

import itertools

import numpy as np

from ember import _dtype as dt

from ..kinds import grid as run
from ..kinds.functional import from_nn
from ..opdef import DTYPES_FLOAT, Kind, OpDef

_A = -0.75  # the cubic convolution's constant (ATen's)


# ---- numpy reference: every sample point as taps (index per dim, weight, its derivatives) ----
def _np_locate(g, size: int, padding: int, align: bool):
    """ATen's grid_sampler_compute_source_index_set_grad: the location and d location / d g."""
    scale = (size - 1) / 2 if align else size / 2
    x = (g + 1) * scale - (0 if align else 0.5)
    mult = np.full_like(x, scale)
    if padding == 2:
        low, span = (0.0, size - 1.0) if align else (-0.5, float(size))
        if span <= 0:
            return np.zeros_like(x), np.zeros_like(x)
        shifted = x - low
        sign = np.where(shifted < 0, -1.0, 1.0)
        extra = np.fmod(np.abs(shifted), span)
        even = np.floor(np.abs(shifted) / span) % 2 == 0
        x = np.where(even, extra, span - extra) + low
        mult = mult * np.where(even, sign, -sign)
    if padding != 0:
        mult = np.where((x > 0) & (x < size - 1), mult, 0.0)
        x = np.clip(x, 0, size - 1)
    return x, mult


def _np_cubic(t):
    """The four weights of taps -1, 0, 1, 2 at fraction t, and their derivatives in t."""
    a, x0, x2, x3 = _A, t + 1, 1 - t, 2 - t
    weights = [
        ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
        ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a,
    ]
    slopes = [
        (3 * a * x0 - 10 * a) * x0 + 8 * a,
        (3 * (a + 2) * t - 2 * (a + 3)) * t,
        -(3 * (a + 2) * x2 - 2 * (a + 3)) * x2,
        -((3 * a * x3 - 10 * a) * x3 + 8 * a),
    ]
    return weights, slopes


def _np_axes(grid, sizes, mode: int, padding: int, align: bool):
    """Per spatial dim (D, H, W order): its taps [(index, weight, slope)] and multiplier."""
    axes = []
    dims = len(sizes)
    for k, size in enumerate(sizes):
        g = grid[..., dims - 1 - k]
        if mode == 2:  # bicubic: unpadded location, each tap's index through the padding
            x = (g + 1) * ((size - 1) / 2 if align else size / 2) - (0 if align else 0.5)
            low = np.floor(x)
            weights, slopes = _np_cubic(x - low)
            taps = [(_np_pad_index(low + i - 1, size, padding, align), w, s)
                    for i, (w, s) in enumerate(zip(weights, slopes))]  # fmt: skip
            axes.append((taps, np.full_like(x, (size - 1) / 2 if align else size / 2)))
            continue
        x, mult = _np_locate(g, size, padding, align)
        if mode == 1:
            taps = [(np.rint(x), np.ones_like(x), np.zeros_like(x))]
        else:
            low = np.floor(x)
            taps = [(low, low + 1 - x, -np.ones_like(x)), (low + 1, x - low, np.ones_like(x))]
        axes.append((taps, mult))
    return axes


def _np_pad_index(v, size: int, padding: int, align: bool):
    if padding == 0:
        return v
    if padding == 2:
        low, span = (0.0, size - 1.0) if align else (-0.5, float(size))
        if span <= 0:
            return np.zeros_like(v)
        extra = np.fmod(np.abs(v - low), span)
        even = np.floor(np.abs(v - low) / span) % 2 == 0
        v = np.where(even, extra, span - extra) + low
    return np.trunc(np.clip(v, 0, size - 1))


def _np_each_tap(input, grid, mode, padding, align):
    """(flat index, inside, weight, slopes per dim) of each tap, over (N, *out)."""
    sizes = input.shape[2:]
    axes = _np_axes(grid.astype(np.float64), sizes, mode, padding, bool(align))
    for combo in itertools.product(*(taps for taps, _ in axes)):
        inside = np.ones(grid.shape[:-1], bool)
        flat = np.zeros(grid.shape[:-1], np.int64)
        for (index, _, _), size in zip(combo, sizes):
            inside &= (index >= 0) & (index < size)
            flat = flat * size + np.clip(index, 0, size - 1).astype(np.int64)
        weight = np.prod([w for _, w, _ in combo], axis=0)
        slopes = [
            np.prod([s if j == k else w for j, (_, w, s) in enumerate(combo)], axis=0)
            for k in range(len(sizes))
        ]
        yield flat, inside, weight, slopes


def _np_gather(input, flat, inside):
    n, c = input.shape[:2]
    values = np.take_along_axis(input.reshape(n, c, -1), flat.reshape(n, 1, -1), 2)
    return values.reshape(n, c, *flat.shape[1:]) * inside[:, None]


def _np_grid_sampler(input, grid, mode, padding, align_corners):
    out = 0.0
    x = input.astype(np.float64)
    for flat, inside, weight, _ in _np_each_tap(x, grid, mode, padding, align_corners):
        out = out + _np_gather(x, flat, inside) * weight[:, None]
    return np.asarray(out, input.dtype)


def _np_grid_sampler_backward(grad, input, grid, mode, padding, align_corners, output_mask):
    x, g = input.astype(np.float64), grad.astype(np.float64)
    n, c = x.shape[:2]
    grad_input = np.zeros((n, c, int(np.prod(x.shape[2:]))))
    grad_grid = np.zeros(grid.shape)
    dims = grid.shape[-1]
    axes = _np_axes(grid.astype(np.float64), x.shape[2:], mode, padding, bool(align_corners))
    for flat, inside, weight, slopes in _np_each_tap(x, grid, mode, padding, align_corners):
        spread = (g * (weight * inside)[:, None]).reshape(n, c, -1)
        rows = np.arange(n)[:, None, None]
        np.add.at(grad_input, (rows, np.arange(c)[None, :, None], flat.reshape(n, 1, -1)), spread)
        along = (_np_gather(x, flat, inside) * g).sum(1)
        for k, slope in enumerate(slopes):
            grad_grid[..., dims - 1 - k] += along * slope
    for k, (_, mult) in enumerate(axes):
        grad_grid[..., dims - 1 - k] *= mult
    grad_input = grad_input.reshape(x.shape).astype(input.dtype) if output_mask[0] else None
    return grad_input, grad_grid.astype(grid.dtype)


# ---- rows -------------------------------------------------------------------------------------
_MODES = "int interpolation_mode, int padding_mode, bool align_corners"


def _row(dims: int, backward: bool) -> OpDef:
    name = f"grid_sampler_{dims}d" + ("_backward" if backward else "")
    if backward:
        schema = (
            f"{name}(Tensor grad_output, Tensor input, Tensor grid, {_MODES}, "
            "bool[2] output_mask) -> (Tensor, Tensor)"
        )
        kernel_args = (
            "(grad_input or None, grad_grid, grad_output, input, grid, interpolation_mode, "
            "padding_mode, align_corners): grad_input and grad_grid fresh and contiguous, "
            "written whole by the kernel; the others any strides, one dtype"
        )
        notes = f"grid_sampler_{dims}d's input and grid gradients (ATen's)"
    else:
        schema = f"{name}(Tensor input, Tensor grid, {_MODES}) -> Tensor"
        kernel_args = (
            "(out, input, grid, interpolation_mode, padding_mode, align_corners): out fresh "
            "and contiguous; input and grid any strides, one dtype"
        )
        notes = f"F.grid_sample of a {dims + 2}-D input, modes as ints (ATen's)"
    return OpDef(
        schema,
        Kind.NN,
        _np_grid_sampler_backward if backward else _np_grid_sampler,
        # the backward of half types runs in float32 (the formula's cast), as PyTorch's opmath
        dtypes=frozenset((dt.float32, dt.float64)) if backward else DTYPES_FLOAT,
        decomposition=from_nn("_grid_rows", f"_{name}"),
        runner=run.grid_sampler_backward if backward else run.grid_sampler,
        function=False,
        method=False,
        out=None,
        samples="grid_sampler",
        # float32: the grid's gradient sums C * taps products; halves: the decomposition's
        # float32 result rounded once
        tolerances={dt.float32: (1e-5, 5e-5), dt.float16: (1e-2, 1e-2), dt.bfloat16: (2e-2, 2e-2)},
        kernel_args=kernel_args,
        notes=notes,
    )


ROWS = [_row(dims, backward) for dims in (2, 3) for backward in (False, True)]
