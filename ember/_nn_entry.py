"""PyTorch's top-level entry points of nn ops that are overloads of, or integer-coded aliases
for, existing functions (issue 13): ``torch._native_batch_norm_legit`` (with or without running
statistics) over native_batch_norm, and ``torch.grid_sampler_2d``/``grid_sampler_3d`` (modes as
integers, as the aten ops take them) over ``nn.functional.grid_sample``. ``FUNCTIONS`` says
where each goes; ember/__init__.py binds them."""

from __future__ import annotations

import sys

# aten's integer codes (GridSampler.h): interpolation and padding modes
_INTERPOLATION = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _ember():
    return sys.modules["ember"]


def _native_batch_norm_legit(input, weight, bias, *args, out=None):
    """Batch norm returning (output, save_mean, save_invstd), as native_batch_norm; the
    ``no_stats`` overload leaves out running_mean and running_var."""
    if len(args) == 5:
        running_mean, running_var, training, momentum, eps = args
    elif len(args) == 3:
        running_mean = running_var = None
        training, momentum, eps = args
    else:
        raise TypeError(
            f"_native_batch_norm_legit() takes 6 or 8 positional arguments but "
            f"{3 + len(args)} were given"
        )
    ember = _ember()
    return ember.native_batch_norm(
        input, weight, bias, running_mean, running_var, training, momentum, eps, out=out
    )


def _mode(name: str, value: int, modes: tuple, dims: int) -> str:
    if (
        not isinstance(value, int)
        or not 0 <= value < len(modes)
        or (dims == 3 and modes[value] == "bicubic")
    ):
        raise RuntimeError(f"grid_sampler_{dims}d(): unsupported {name} {value}")
    return modes[value]


def _grid_sampler(dims: int):
    def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
        mode = _mode("interpolation_mode", interpolation_mode, _INTERPOLATION, dims)
        padding = _mode("padding_mode", padding_mode, _PADDING, dims)
        if input.ndim != dims + 2:
            raise RuntimeError(
                f"grid_sampler(): expected {dims + 2}D input and grid with same number of "
                f"dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
                f"{list(grid.shape)}"
            )
        functional = _ember().nn.functional
        return functional.grid_sample(input, grid, mode, padding, bool(align_corners))

    grid_sampler.__name__ = grid_sampler.__qualname__ = f"grid_sampler_{dims}d"
    grid_sampler.__doc__ = (
        f"``nn.functional.grid_sample`` of a {dims + 2}-D input with aten's integer modes: "
        f"interpolation {dict(enumerate(_INTERPOLATION[: 5 - dims]))}, padding "
        f"{dict(enumerate(_PADDING))}."
    )
    return grid_sampler


FUNCTIONS = {
    "_native_batch_norm_legit": _native_batch_norm_legit,
    "grid_sampler_2d": _grid_sampler(2),
    "grid_sampler_3d": _grid_sampler(3),
}
METHODS: dict = {}
