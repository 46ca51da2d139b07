"""PyTorch's multi-tensor (``torch._foreach_*``) ops that gradient clipping and the optimizers
call: the norm of each tensor of a list, the scaling of a list by one coefficient and the
increment of a list (Adam's step counters), one call each (issue 20: minGPT's
``clip_grad_norm_`` made 6 op calls per gradient). The decompositions (an op per
tensor) serve devices and lists the backends' kernels do not take (kinds/foreach.py), and
autograd: while a tensor of the list requires grad the ops decompose there, so their parts are
recorded (PyTorch differentiates its foreach ops)."""

from __future__ import annotations

import ember

from ..kinds import foreach as run
from ..opdef import DTYPES_FLOAT, Kind, OpDef


def _norms(tensors, ord=2, dtype=None):
    return [ember.linalg.vector_norm(t, ord, dtype=dtype) for t in tensors]


def _scale(tensors, other):
    for t in tensors:
        t.mul_(other)


def _increment(tensors, scalar):
    for t in tensors:
        t.add_(scalar)


def _row(schema, decomposition, runner, samples, kernel_args, notes):
    return OpDef(
        schema,
        Kind.FOREACH,
        None,
        dtypes=DTYPES_FLOAT,
        decomposition=decomposition,
        runner=runner,
        method=False,
        samples=samples,
        kernel_args=kernel_args,
        notes=notes,
    )


ROWS = [
    _row(
        "_foreach_norm(Tensor[] self, Scalar ord=2, ScalarType? dtype=None) -> Tensor[]",
        _norms,
        run.norm,
        "foreach_norm",
        "(out, tensors, ord): tensors a list of contiguous tensors of one dtype; out 1-d of "
        "their count and dtype; ord a float (2, 1, 0, inf, -inf or any p)",
        "clip_grad_norm_: one call per device and dtype",
    ),
    _row(
        "_foreach_mul_(Tensor[] self, Tensor other) -> ()",
        _scale,
        run.mul_,
        "foreach_mul",
        "(tensors, scale): tensors a list of contiguous tensors of one dtype, scale a Python "
        "float; in place",
        "clip_grads_with_norm_: one call per device and dtype; other a 0-dim tensor or a number",
    ),
    _row(
        "_foreach_add_(Tensor[] self, Scalar scalar) -> ()",
        _increment,
        run.add_,
        "foreach_add",
        "(tensors, scalar): tensors a list of contiguous tensors of one dtype, scalar a Python "
        "float; in place",
        "Adam/AdamW's step counters: one call per device and dtype (PyTorch's "
        "_foreach_add_.Scalar)",
    ),
]
