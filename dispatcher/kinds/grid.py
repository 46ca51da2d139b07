"""Runners of the grid sampler's rows (ATen's ``grid_sampler_2d``/``_3d`` and their backward).

Each calls the device's kernel for a call it covers: input, grid (and grad_output) tensors of one
float dtype the backend has a kernel for, on one device, of the row's rank, with a non-empty
input, matching batch and grid sizes and modes in range. Anything else (errors included: the
decomposition words them as PyTorch does) runs the row's decomposition, the composite any device
runs. The transforms (vmap, forward AD) and ember.compile's traces see the decomposition too
(``fused``).
"""

from __future__ import annotations

from ember._tensor import Tensor, empty

from .functional import run as _checked_decomposition


def _covered(op, dims: int, tensors, modes) -> object | None:
    """The kernel when it takes this call as it is, else None."""
    input, grid = tensors[-2], tensors[-1]
    if not all(isinstance(t, Tensor) for t in tensors):
        return None
    device, dtype = input._storage.device, input._dtype
    if any(t._dtype is not dtype or t._storage.device is not device for t in tensors):
        return None
    shape, grid_shape = input._shape, grid._shape
    if len(shape) != dims + 2 or len(grid_shape) != dims + 2 or grid_shape[-1] != dims:
        return None
    if shape[0] != grid_shape[0] or 0 in shape[2:]:
        return None
    interpolation, padding, align_corners = modes
    if not (isinstance(interpolation, int) and isinstance(padding, int)):
        return None
    if not (0 <= interpolation <= (2 if dims == 2 else 1) and 0 <= padding <= 2):
        return None
    if not isinstance(align_corners, (bool, int)):
        return None
    return op.kernel(device.type, dtype)


def _out_shape(input: Tensor, grid: Tensor) -> tuple:
    return input._shape[:2] + grid._shape[1:-1]


def grid_sampler(op, input, grid, interpolation_mode, padding_mode, align_corners):
    """``kernel(out, input, grid, interpolation_mode, padding_mode, align_corners)``."""
    modes = (interpolation_mode, padding_mode, align_corners)
    dims = 2 if op.name == "grid_sampler_2d" else 3
    kernel = _covered(op, dims, (input, grid), modes)
    if kernel is None:
        return _checked_decomposition(op, input, grid, *modes)
    out = empty(_out_shape(input, grid), input._dtype, input._storage.device)
    kernel(out, input, grid, *modes)
    return out


def grid_sampler_backward(op, grad_output, input, grid, interpolation_mode, padding_mode,
                          align_corners, output_mask):  # fmt: skip
    """``kernel(grad_input or None, grad_grid, grad_output, input, grid, interpolation_mode,
    padding_mode, align_corners)``: the input's gradient only where ``output_mask[0]``."""
    modes = (interpolation_mode, padding_mode, align_corners)
    args = (grad_output, input, grid, *modes, output_mask)
    dims = 2 if op.name == "grid_sampler_2d_backward" else 3
    kernel = _covered(op, dims, (grad_output, input, grid), modes)
    if kernel is None or grad_output._shape != _out_shape(input, grid):
        return _checked_decomposition(op, *args)
    device = input._storage.device
    grad_input = empty(input._shape, input._dtype, device) if output_mask[0] else None
    grad_grid = empty(grid._shape, grid._dtype, device)
    kernel(grad_input, grad_grid, grad_output, input, grid, *modes)
    return grad_input, grad_grid


for _runner in (grid_sampler, grid_sampler_backward):
    _runner.fused = True
