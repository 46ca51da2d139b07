"""affine_grid and grid_sample (bilinear/trilinear, nearest, bicubic; zeros, border and
reflection padding), as gathers from the flattened input with weights computed from the grid,
so autograd gives the gradients for both the input and the grid, as PyTorch's kernels do."""

from __future__ import annotations

import warnings

import ember

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _base_coords(size: int, align_corners: bool, dtype, device):
    """PyTorch's linspace(-1, 1, size), pulled in by (size - 1) / size unless aligned."""
    if size <= 1:
        return ember.zeros(max(size, 0), dtype=dtype, device=device)
    coords = ember.linspace(-1, 1, size, dtype=dtype, device=device)
    return coords if align_corners else coords * ((size - 1) / size)


def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3)
    (or (N, 3, 4)) applied to the normalised output coordinates."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    dims = len(size) - 2
    if dims not in (2, 3):
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (dims, dims + 1):
        kind = (
            "2D affine matrices of shape Nx2x3"
            if dims == 2
            else "3D affine matrices of shape Nx3x4"
        )
        raise ValueError(f"Expected a batch of {kind} for size {size}. Got {list(theta.shape)}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    axes = [_base_coords(n, align_corners, theta.dtype, theta.device) for n in spatial]
    # base grid (*spatial, dims + 1): x (the last dim) first, then y (, z), then 1
    mesh = [_along(axis, d, spatial) for d, axis in enumerate(axes)]
    ones = ember.ones(spatial, dtype=theta.dtype, device=theta.device)
    base = ember.stack([*reversed(mesh), ones], -1).reshape(-1, dims + 1)
    grid = ember.matmul(base, theta.transpose(1, 2))  # (N, prod(spatial), dims)
    return grid.view(size[0], *spatial, dims)


def _along(axis, dim: int, shape):
    """``axis`` laid along ``dim`` of ``shape`` (one of meshgrid's "ij" outputs)."""
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return axis.view(view).expand(*shape)


def _unnormalize(coord, size: int, align_corners: bool):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low: int, twice_high: int):
    """PyTorch's reflect_coordinates: fold ``coord`` into [low, high] by mirror images."""
    if twice_low == twice_high:
        return ember.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = ember.abs(coord - low)
    extra = ember.fmod(distance, span)
    flips = ember.floor(distance / span)
    return ember.where(ember.remainder(flips, 2) == 0, extra + low, span - extra + low)


def _pad_coords(coord, size: int, padding_mode: str, align_corners: bool):
    """Source coordinates after the padding mode: clamped (border), mirrored (reflection)."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _gather(flat, positions, sizes, weight=None):
    """Values of ``flat`` (N, C, prod(sizes)) at integer ``positions`` (one (N, *out) tensor
    per dim), times ``weight`` (N, *out) when given, zero outside the input. The in-bounds mask
    multiplies the weight, not the gathered (N, C, *out) values: one product over all channels
    less per tap, forward and backward (the mask is 0 or 1, so the values are the same)."""
    inside = None
    index = None
    for pos, size in zip(positions, sizes):
        ok = (pos >= 0) & (pos < size)
        inside = ok if inside is None else inside & ok
        pos = pos.clamp(0, size - 1)
        index = pos if index is None else index * size + pos
    n, c = flat.shape[:2]
    out_shape = index.shape[1:]
    picked = flat.gather(2, index.reshape(n, 1, -1).expand(n, c, index[0].numel()))
    picked = picked.view(n, c, *out_shape)
    mask = inside.to(flat.dtype)
    return picked * (mask if weight is None else weight * mask).unsqueeze(1)


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    dims = input.ndim - 2
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(
            "grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, "
            f"but got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
        )
    if grid.shape[-1] != dims:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {dims} in last dimension, but got grid "
            f"with sizes {list(grid.shape)}"
        )
    if mode == "bicubic" and dims != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


_CUBIC_A = -0.75


def _cubic_weights(t):
    """The four cubic-convolution weights (A = -0.75) of taps -1, 0, 1, 2 at fraction t."""
    a = _CUBIC_A
    x1, x2 = t + 1, 1 - t
    return (
        ((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1,
        ((a * (x2 + 1) - 5 * a) * (x2 + 1) + 8 * a) * (x2 + 1) - 4 * a,
    )


def _bicubic(flat, coords, sizes, padding_mode, align_corners):
    """4 x 4 taps around each point, each tap's position through the padding mode."""
    (y, x), (height, width) = coords, sizes
    y0, x0 = ember.floor(y), ember.floor(x)
    wy, wx = _cubic_weights(y - y0), _cubic_weights(x - x0)
    out = 0
    for j in range(4):
        row = _pad_coords(y0 + (j - 1), height, padding_mode, align_corners).to(ember.int64)
        for i in range(4):
            col = _pad_coords(x0 + (i - 1), width, padding_mode, align_corners).to(ember.int64)
            out = out + _gather(flat, (row, col), sizes, wy[j] * wx[i])
    return out


# at::native's integer codes of the modes (GridSampler.h), as the aten rows take them
INTERPOLATION_MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) (or (N, C, D, H, W)) at the normalised (x, y[, z])
    positions of ``grid`` (N, H_out, W_out, 2) (or (N, D_out, H_out, W_out, 3)).

    One ``grid_sampler_2d``/``grid_sampler_3d`` op (a kernel where the backend has one, this
    module's composite elsewhere)."""
    _check_grid_sample(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    sampler = ember.ops.grid_sampler_2d if input.ndim == 4 else ember.ops.grid_sampler_3d
    return sampler(
        input,
        grid,
        INTERPOLATION_MODES.index(mode),
        PADDING_MODES.index(padding_mode),
        bool(align_corners),
    )


def composite(input, grid, mode: str, padding_mode: str, align_corners: bool):
    """grid_sample in ember ops (the aten rows' decomposition): gathers from the flattened
    input with weights from the grid; autograd gives both gradients."""
    _check_grid_sample(input, grid, mode, padding_mode)
    dims = input.ndim - 2
    sizes = tuple(input.shape[2:])
    flat = input.reshape(input.shape[0], input.shape[1], -1)
    # grid's last dim is (x, y[, z]): x indexes the input's last dim
    coords = [
        _unnormalize(grid[..., dims - 1 - i], size, align_corners) for i, size in enumerate(sizes)
    ]
    if mode == "bicubic":
        return _bicubic(flat, coords, sizes, padding_mode, align_corners)
    coords = [_pad_coords(c, n, padding_mode, align_corners) for c, n in zip(coords, sizes)]
    if mode == "nearest":
        positions = [ember.round(c).to(ember.int64) for c in coords]
        # PyTorch's grid gradient under nearest is zero: keep the grid in the graph
        still = sum(c * 0 for c in coords).unsqueeze(1)
        return _gather(flat, positions, sizes) + still
    lows = [ember.floor(c) for c in coords]
    fractions = [c - low for c, low in zip(coords, lows)]
    out = 0
    for corner in range(2**dims):
        bits = [(corner >> (dims - 1 - d)) & 1 for d in range(dims)]
        positions = [(low + bit).to(ember.int64) for low, bit in zip(lows, bits)]
        weight = None
        for frac, bit in zip(fractions, bits):
            factor = frac if bit else 1 - frac
            weight = factor if weight is None else weight * factor
        out = out + _gather(flat, positions, sizes, weight)
    return out
