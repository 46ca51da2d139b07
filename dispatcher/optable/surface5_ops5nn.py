"""PyTorch's aten entry points of the nn family that autograd and the compilers call directly
(issue 13): softmax's and dropout's backward, and the softmax that attention calls.
Each is a composite of existing ops, written as PyTorch's own decompositions (torch/_decomp)
write it, so autograd comes from the parts."""

from __future__ import annotations

import numpy as np

import ember

from ..kinds import nn as run
from ..opdef import DTYPES_ALL, DTYPES_FLOAT, OUT_EXACT, Kind, OpDef, Promotion


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


# ---- _log_softmax_backward_data --------------------------------------------------------------
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    # torch/_decomp: grad - exp(y) * sum(grad), cast back to the forward's input dtype; half
    # types in float32, as PyTorch's CPU kernel (its sum in float16 would be 1e-2 off)
    if output.dtype in (ember.float16, ember.bfloat16):
        grad_output, output = grad_output.float(), output.float()
    grad_input = grad_output - ember.exp(output) * grad_output.sum(dim, keepdim=True)
    if grad_input.dtype != input_dtype:
        grad_input = grad_input.to(input_dtype)
    return grad_input.contiguous()


def _np_log_softmax_backward_data(grad_output, output, dim, input_dtype):
    grad_input = grad_output - np.exp(output) * grad_output.sum(dim, keepdims=True)
    return grad_input.astype(input_dtype.np)


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


# ---- _safe_softmax ---------------------------------------------------------------------------
def _safe_softmax(x, dim, dtype=None):
    # torch/_decomp: softmax, with rows that are -inf throughout giving zeros, not NaN (a query
    # whose every key is masked out attends to nothing). Those rows go through softmax as zeros,
    # so their gradient is 0 (PyTorch's formula reads the zero result), not 0 * NaN.
    masked = (x == float("-inf")).all(dim, keepdim=True)
    zero = ember.zeros((), dtype=x.dtype, device=x.device)
    out = ember.softmax(ember.where(masked, zero, x), dim, dtype=dtype)
    return ember.where(masked, zero.to(out.dtype), out)


def _np_safe_softmax(x, dim, dtype=None):
    x = x.astype(dtype.np) if dtype is not None else x
    with np.errstate(invalid="ignore"):
        shifted = np.exp(x - np.max(x, axis=dim, keepdims=True))
        out = shifted / shifted.sum(axis=dim, keepdims=True)
    return np.where(np.all(x == -np.inf, axis=dim, keepdims=True), 0, out).astype(x.dtype)


def _backward_data_row(forward: str, reference, decomposition, notes: str, out=None) -> OpDef:
    """softmax's and log_softmax's backward: a fused kernel per line where a backend has one.
    ``out``: PyTorch's Python binding takes out= for log_softmax's, not for softmax's."""
    return OpDef(
        f"{forward}_backward_data(Tensor grad_output, Tensor output, int dim, "
        "ScalarType input_dtype) -> Tensor",
        Kind.NN,
        reference,
        promotion=Promotion.KEEP,
        dtypes=DTYPES_FLOAT,
        decomposition=decomposition,
        runner=run.along_dim_backward,
        method=False,
        out=out,
        samples=f"{forward.lstrip('_')}_backward_data",
        kernel_args="(out, grad_output, output, dim): contiguous, one dtype and shape",
        notes=notes,
    )


ROWS = [
    _backward_data_row(
        "_softmax",
        _np_softmax_backward_data,
        _softmax_backward_data,
        "softmax's input gradient from its output: y * (grad - sum(grad * y, dim)); a fused "
        "kernel makes one pass per line (issue 20)",
    ),
    _backward_data_row(
        "_log_softmax",
        _np_log_softmax_backward_data,
        _log_softmax_backward_data,
        "log_softmax's input gradient from its output: grad - exp(y) * sum(grad, dim)",
        out=OUT_EXACT,  # PyTorch's checks the dtype, not overlap
    ),
    OpDef(
        "_safe_softmax(Tensor input, int dim, ScalarType? dtype=None) -> Tensor",
        Kind.NN,
        _np_safe_softmax,
        dtypes=DTYPES_FLOAT,
        decomposition=_safe_softmax,
        method=False,
        function=False,
        out=None,
        samples="along_dim",
        notes="softmax with rows masked out throughout (all -inf) giving zeros, not NaN",
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
