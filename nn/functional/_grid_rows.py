"""Decompositions of grid_sample's aten rows (dispatcher/optable/grid_sampler.py): the forward
is grid.py's composite; the backward is that composite's vector-Jacobian product through
autograd, recorded when grad mode is on (a double backward: the layer runs this decomposition
with its parts recorded, as the composite's own graph was before the rows)."""

from __future__ import annotations

import ember

from .grid import INTERPOLATION_MODES, PADDING_MODES, composite


def _modes(dims: int, interpolation_mode, padding_mode) -> tuple:
    """The modes' names from at::native's ints (PyTorch's error for one out of range)."""
    modes = []
    for name, value, names in (
        ("interpolation_mode", interpolation_mode, INTERPOLATION_MODES),
        ("padding_mode", padding_mode, PADDING_MODES),
    ):
        if not isinstance(value, int) or not 0 <= value < len(names):
            raise RuntimeError(f"grid_sampler_{dims}d(): unsupported {name} {value}")
        modes.append(names[value])
    if dims == 3 and modes[0] == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return tuple(modes)


_HALVES = (ember.float16, ember.bfloat16)


def _in_float(row):
    """float16 and bfloat16 through float32, rounded once at the end (PyTorch's opmath): a
    location rounded to a half type lands on the wrong side of a floor."""

    def decomposition(*args):
        dtype = args[1].dtype  # the forward's grid, the backward's input: one dtype
        if dtype not in _HALVES:
            return row(*args)
        up = [a.float() if isinstance(a, ember.Tensor) else a for a in args]
        out = row(*up)
        return (
            out.to(dtype)
            if isinstance(out, ember.Tensor)
            else tuple(None if t is None else t.to(dtype) for t in out)
        )

    decomposition.__name__ = row.__name__
    return decomposition


def _forward(dims: int):
    @_in_float
    def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
        modes = _modes(dims, interpolation_mode, padding_mode)
        return composite(input, grid, *modes, bool(align_corners))

    grid_sampler.__name__ = f"_grid_sampler_{dims}d"
    return grid_sampler


def _backward(dims: int):
    def grid_sampler_backward(grad_output, input, grid, interpolation_mode, padding_mode,
                              align_corners, output_mask):  # fmt: skip
        modes = _modes(dims, interpolation_mode, padding_mode)
        # a double backward: the parts carry its graph
        tensors = (grad_output, input, grid)
        recorded = ember.is_grad_enabled() and any(t.requires_grad for t in tensors)
        with ember.enable_grad():
            x = input if recorded and input.requires_grad else input.detach()
            g = grid if recorded and grid.requires_grad else grid.detach()
            x = x if x.requires_grad or not output_mask[0] else x.requires_grad_()
            g = g if g.requires_grad else g.requires_grad_()
            out = composite(x, g, *modes, bool(align_corners))
            wanted = (x, g) if output_mask[0] else (g,)
            grads = ember.autograd.grad(
                out, wanted, grad_output, create_graph=recorded, allow_unused=True
            )
        grad_input = grads[0] if output_mask[0] else None
        grad_grid = grads[-1] if grads[-1] is not None else ember.zeros_like(grid)
        if grad_input is None and output_mask[0]:
            grad_input = ember.zeros_like(input)
        return grad_input, grad_grid

    grid_sampler_backward.__name__ = f"_grid_sampler_{dims}d_backward"
    return grid_sampler_backward


_grid_sampler_2d = _forward(2)
_grid_sampler_3d = _forward(3)
_grid_sampler_2d_backward = _backward(2)
_grid_sampler_3d_backward = _backward(3)
