"""The op table: every op ember knows, one row each, gathered from one module per family.

``build()`` turns rows into runtime ``Op`` objects; in-place variants (``add_``) are derived from
rows marked ``inplace``. Nothing registers itself on import: this list of modules is the table.
"""

from __future__ import annotations

import dataclasses

from .. import meta_rules
from ..kinds import _common
from ..kinds import elementwise as run_elementwise
from ..op import Op
from ..opdef import Kind, OpDef
from . import (
    activation_backward,
    amp,
    complex,
    complex_surface,
    data,
    distribution_grads,
    elementwise,
    factory,
    fft,
    fill,
    foreach,
    functional,
    grid_sampler,
    lapack,
    limited,
    linalg,
    linalg_eig,
    linalg_exp,
    linalg_norms,
    linalg_ormqr,
    linalg_products,
    linalg_solve,
    linalg_spectral,
    loss_nll,
    nn,
    nn_native,
    optim_fused,
    recurrent,
    reduction,
    scaled_mm,
    special,
    surface5_ops5nn,
    surface6_ops6,
    surface_copies,
    surface_gradient,
    surface_hash,
    surface_histogram,
    surface_index_reduce,
    surface_integrate,
    surface_math,
    surface_more,
    surface_positions,
    surface_quantile,
    surface_random,
    surface_reduce,
    surface_scatter,
    surface_select,
    surface_shape,
    surface_stats,
    surface_strided,
    surface_unique,
    upsample,
    view,
)

MODULES = (
    elementwise,
    reduction,
    view,
    data,
    fill,
    linalg,
    factory,
    nn,
    functional,
    amp,
    special,
    fft,
)
# PyTorch's core surface (issue 13), in modules of their own
MODULES += (
    surface_copies,
    surface_integrate,
    surface_math,
    surface_more,
    surface_quantile,
    surface_reduce,
    surface_hash,
    surface_scatter,
    surface_select,
    surface_shape,
    surface_stats,
)
# issue 13, batch A: strided copies and scatters, positions and fills, in-place samplers
MODULES += (surface_strided, surface_positions, surface_random)
# ember.linalg: LAPACK primitives, then the composites over them.
MODULES += (lapack, linalg_solve, linalg_spectral, linalg_norms, linalg_products, linalg_exp)
# complex dtypes (issue 14): their views and conjugate; complex.widen adds them to other rows.
MODULES += (complex,)
# issue 13, complex batch: sgn, isreal, complex/polar as rows (out=); linalg.eig/eigvals
MODULES += (complex_surface, linalg_eig)
# PyTorch's core surface, batch B (issue 13): composites of existing ops
MODULES += (surface_gradient, surface_index_reduce, surface_histogram, nn_native, linalg_ormqr)
# issue 13, batch ops5nn: the nn family's aten entry points
MODULES += (surface5_ops5nn,)
# issue 15: the float8 matmul (PyTorch's CPU emulation)
MODULES += (scaled_mm,)
# the optimizers' fused steps (issues 17 and 20)
MODULES += (optim_fused,)
# issue 13, batch ops6: the masked index entry points of upsampling's decompositions
MODULES += (surface6_ops6,)
# the recurrent layers as one op per call (issue 16: ONNX recurrent nodes)
MODULES += (recurrent,)
# issue 14: the gamma/Dirichlet reparameterization rows
MODULES += (distribution_grads,)
# issue 13: unique's op (the CPU's one-sort kernel)
MODULES += (surface_unique,)
# issue 16: F.interpolate's resizes, one node each (ONNX Resize)
MODULES += (upsample,)
# issue 20: the activations' fused backward rows
MODULES += (activation_backward,)
# issue 20: gradient clipping's multi-tensor rows
MODULES += (foreach,)
# issue 20: nll_loss's forward and backward, one kernel each
MODULES += (loss_nll,)
# issue 20: grid_sample's aten rows, forward and backward, one kernel each
MODULES += (grid_sampler,)


def _decompose(op, *args):
    """Backend layer of a composite without a runner: its decomposition, in ember ops."""
    _common.check_tensor_lists(op, args)
    _common.check_dtypes(op, args)
    if op.mutates and args and isinstance(args[0], _common.Tensor):
        _common.check_writable(op.name, args[0])  # before any partial write, naming this op
    return op.decomposition(*args)


def _written_back(composite):
    """The in-place form of a composite (not elementwise): its result copied into the target,
    so autograd records the parts and the copy (index_fill_).

    A target that requires grad is read through a clone: the parts may save it for backward
    (renorm's product and norm), and the copy would then bump the version they saved, where
    PyTorch's in-place formulas save a clone of self."""

    def decomposition(target, *args):
        source = target.clone() if target.requires_grad else target
        return target.copy_(composite(source, *args))

    return decomposition


def _inplace_def(defn: OpDef, name: str) -> OpDef:
    head, _, tail = defn.schema.partition("(")
    args, _, _ = tail.rpartition(") ->")
    first, _, rest = args.partition(",")
    self_arg = first.replace(first.split()[-1], "self")
    schema = f"{name}({self_arg}{',' if rest else ''}{rest}) -> Tensor"
    return dataclasses.replace(
        defn,
        schema=schema,
        inplace=False,
        function=False,
        method=True,
        frontend=False,
        decomposition=None
        if defn.kind is Kind.ELEMENTWISE or defn.decomposition is None
        else _written_back(defn.decomposition),
        out=None,
        notes=f"in-place form of {head}",
    )


def _inplace_runner(base: Op):
    return run_elementwise.inplace if base.kind is Kind.ELEMENTWISE else _common.inplace_via_copy


def build() -> dict:
    ops: dict = {}
    for module in MODULES:
        for defn in module.ROWS:
            runner = defn.runner or _decompose
            op = Op(defn, runner)
            if op.name in ops:
                raise ValueError(f"op table: '{op.name}' is defined twice")
            ops[op.name] = op
            if defn.inplace:
                name = f"{op.name}_"
                ops[name] = Op(_inplace_def(defn, name), _inplace_runner(op), inplace_of=op)
    complex.widen(ops)
    limited.widen(ops)
    limited.twins(ops)
    meta_rules.install(ops)
    _common.OPS.clear()
    _common.OPS.update(ops)
    return ops


OPS = build()
