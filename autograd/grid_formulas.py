"""Backward formulas of grid_sample's forward rows (dispatcher/optable/grid_sampler.py),
PyTorch's derivatives.yaml entries: both gradients from one ``grid_sampler_{2,3}d_backward``
call, the input's only when it needs one (``output_mask``). The backward rows have no formula:
a double backward differentiates their decomposition (the composite's VJP). Merged into the one
table of autograd/formulas.py.
"""

from __future__ import annotations

import ember as E

from .formula import Formula as F  # noqa: N817 - the table reads better with one letter


def _grid_sampler(dims: int):
    def formula(ctx, g):
        backward = E.ops.grid_sampler_2d_backward if dims == 2 else E.ops.grid_sampler_3d_backward
        mask = [bool(ctx.needs_input_grad[0]), True]
        tensors = (g, ctx.input, ctx.grid)
        if g.dtype in (E.float16, E.bfloat16):  # the backward rows: float32 (opmath) for halves
            tensors = tuple(t.float() for t in tensors)
        modes = (ctx.interpolation_mode, ctx.padding_mode, ctx.align_corners)
        return backward(*tensors, *modes, mask)  # the engine casts the gradients back

    return formula


FORMULAS = {
    f"grid_sampler_{dims}d": F(_grid_sampler(dims), save=("input", "grid")) for dims in (2, 3)
}
