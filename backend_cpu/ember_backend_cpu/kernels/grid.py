"""Glue for the grid sampler kernels (grid_sampler.c): grid_sampler_2d/_3d and their backward.

The core's runners (dispatcher/kinds/grid.py) pass tensors of one float dtype, of the row's
rank, any strides; the outputs fresh and contiguous. A 2-D call is laid out as a 3-D one with a
depth of 1 (stride 0).
"""

from __future__ import annotations

from ._args import addr, raise_status

DTYPES = ("float32", "float64")


def _spatial(t, dims: int) -> tuple:
    """(sizes, strides) of a (N, C, [D,] H, W) tensor, or of a grid (N, [D,] H, W, dims), as
    3-D ones."""
    if dims == 3:
        return t._shape, t._stride
    return (*t._shape[:2], 1, *t._shape[2:]), (*t._stride[:2], 0, *t._stride[2:])


def _geometry(ffi, input, grid, grad_output=None):
    dims = len(input._shape) - 2
    in_shape, in_strides = _spatial(input, dims)
    if dims == 3:
        out_spatial, grid_strides = grid._shape[1:4], grid._stride
    else:  # grid (N, H, W, 2): no depth
        out_spatial = (1, *grid._shape[1:3])
        grid_strides = (grid._stride[0], 0, *grid._stride[1:])
    out_strides = (0,) * 5 if grad_output is None else _spatial(grad_output, dims)[1]
    values = (*in_shape, *out_spatial, *in_strides, *grid_strides, *out_strides)
    return dims, ffi.new("int64_t[23]", values)


def build(ffi, lib) -> dict:
    def forward(out, input, grid, interpolation_mode, padding_mode, align_corners):
        dims, geometry = _geometry(ffi, input, grid)
        status = lib.ember_grid_sampler(
            input._dtype.code, dims, addr(out), addr(input), addr(grid), geometry,
            interpolation_mode, padding_mode, int(align_corners),
        )  # fmt: skip
        if status:
            raise_status(status, f"grid_sampler_{dims}d", input._dtype.code)

    def backward(grad_input, grad_grid, grad_output, input, grid, interpolation_mode,
                 padding_mode, align_corners):  # fmt: skip
        dims, geometry = _geometry(ffi, input, grid, grad_output)
        status = lib.ember_grid_sampler_backward(
            input._dtype.code, dims, 0 if grad_input is None else addr(grad_input),
            addr(grad_grid), addr(grad_output), addr(input), addr(grid), geometry,
            interpolation_mode, padding_mode, int(align_corners),
        )  # fmt: skip
        if status:
            raise_status(status, f"grid_sampler_{dims}d_backward", input._dtype.code)

    table = {}
    for dims in (2, 3):
        table[f"grid_sampler_{dims}d"] = dict.fromkeys(DTYPES, forward)
        table[f"grid_sampler_{dims}d_backward"] = dict.fromkeys(DTYPES, backward)
    return table
