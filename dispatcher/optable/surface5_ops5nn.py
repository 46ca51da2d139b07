"""PyTorch's aten entry points of the nn family that autograd and the compilers call directly
(issue 13): softmax's and dropout's backward.
Each is a composite of existing ops, written as PyTorch's own decompositions (torch/_decomp)
write it, so autograd comes from the parts."""

from __future__ import annotations

import numpy as np

from ..opdef import DTYPES_ALL, DTYPES_FLOAT, Kind, OpDef, Promotion


# ---- _softmax_backward_data ------------------------------------------------------------------
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    # torch/_decomp: grad * y - y * sum(grad * y), then cast back to the forward's input dtype
    # (the half-to-float softmax computes in float)
    product = grad_output * output
    grad_input = product - output * product.sum(dim, keepdim=True)
    if grad_input.dtype != input_dtype:
        grad_input = grad_input.to(input_dtype)
    return grad_input.contiguous()


def _np_softmax_backward_data(grad_output, output, dim, input_dtype):
    product = grad_output * output
    return (product - output * product.sum(dim, keepdims=True)).astype(input_dtype.np)


# ---- native_dropout_backward -----------------------------------------------------------------
def _native_dropout_backward(grad_output, mask, scale):
    # PyTorch's CPU kernel: grad * mask * scale, promoted as written (an integer or bool
    # gradient times a float scale gives the default float)
    return grad_output * mask * float(scale)


def _np_native_dropout_backward(grad_output, mask, scale):
    out = grad_output * mask
    if out.dtype.kind in "biu":
        out = out.astype(np.float32)
    return out * np.asarray(scale, out.dtype)


ROWS = [
    OpDef(
        "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
        "ScalarType input_dtype) -> Tensor",
        Kind.NN,
        _np_softmax_backward_data,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_FLOAT,
        decomposition=_softmax_backward_data,
        method=False,
        out=None,
        samples="softmax_backward_data",
        notes="softmax's input gradient from its output: y * (grad - sum(grad * y, dim))",
    ),
    OpDef(
        "native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
        Kind.NN,
        _np_native_dropout_backward,
        promotion=Promotion.INT_TO_FLOAT,
        dtypes=DTYPES_ALL,
        decomposition=_native_dropout_backward,
        method=False,
        out=None,
        samples="native_dropout_backward",
        notes="grad * mask * scale; integer and bool gradients give the default float",
    ),
]
