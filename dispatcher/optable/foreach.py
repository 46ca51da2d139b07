"""PyTorch's multi-tensor (``torch._foreach_*``) ops that gradient clipping calls: the norm of
each tensor of a list and the scaling of a list by one coefficient, one call each (issue 20:
minGPT's ``clip_grad_norm_`` made 6 op calls per gradient). The decompositions (an op per
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


ROWS = [
    OpDef(
        "_foreach_norm(Tensor[] self, Scalar ord=2, ScalarType? dtype=None) -> Tensor[]",
        Kind.FOREACH,
        None,
        dtypes=DTYPES_FLOAT,
        decomposition=_norms,
        runner=run.norm,
        method=False,
        samples="foreach_norm",
        kernel_args="(out, tensors, ord): tensors a list of contiguous tensors of one dtype; "
        "out 1-d of their count and dtype; ord a float (2, 1, 0, inf, -inf or any p)",
        notes="clip_grad_norm_: one call per device and dtype",
    ),
    OpDef(
        "_foreach_mul_(Tensor[] self, Tensor other) -> ()",
        Kind.FOREACH,
        None,
        dtypes=DTYPES_FLOAT,
        decomposition=_scale,
        runner=run.mul_,
        method=False,
        samples="foreach_mul",
        kernel_args="(tensors, scale): tensors a list of contiguous tensors of one dtype, "
        "scale a Python float; in place",
        notes="clip_grads_with_norm_: one call per device and dtype; other a 0-dim tensor or "
        "a number",
    ),
]
