"""The activations' input gradients as rows of their own (issue 20), under PyTorch's aten names:
``gelu_backward``, ``silu_backward``, ``sigmoid_backward``, ``tanh_backward`` and
``threshold_backward`` (relu's). The activations' formulas (autograd/formulas.py) call them, so
a backward is one fused pass where a backend has the kernel (the CPU's binary.def, the GPU
codegen) instead of a chain of 3-9 elementwise ops; the decompositions below are those chains,
for every other device. Each row has its own formula (double backward)."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds import elementwise as run
from ..opdef import DTYPES_FLOAT, DTYPES_NUMERIC, Kind, OpDef, Promotion
from .elementwise import _erf

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_FORMS = ("none", "tanh")


# ---- decompositions: the formulas' former chains ---------------------------------------------
def _in_float(chain):
    """float16 and bfloat16 through float32, rounded once at the end, as PyTorch's opmath
    kernels compute them (a chain rounded at every step is 1e-2 off)."""

    def decomposition(grad_output, x, *params):
        dtype = x.dtype
        if dtype not in (ember.float16, ember.bfloat16):
            return chain(grad_output, x, *params)
        return chain(grad_output.float(), x.float(), *params).to(dtype)

    decomposition.__name__ = chain.__name__
    return decomposition


@_in_float
def _gelu_backward(grad_output, x, approximate="none"):
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        t = ember.tanh(inner)
        d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    # Phi(x) + x phi(x): t = x / sqrt 2, Phi = (1 + erf t) / 2, phi = exp(-t^2) / sqrt(2 pi)
    t = x * (1 / math.sqrt(2))
    cdf = (ember.erf(t) + 1) * 0.5
    bell = ember.exp(-ember.square(t))
    return ember.addcmul(cdf, x, bell, value=_INV_SQRT_2PI) * grad_output


@_in_float
def _silu_backward(grad_output, x):
    s = ember.sigmoid(x)
    return grad_output * s * (1 + x * (1 - s))


@_in_float
def _sigmoid_backward(grad_output, output):
    return grad_output * (1 - output) * output


@_in_float
def _tanh_backward(grad_output, output):
    return grad_output * (1 - output * output)


def _threshold_backward(grad_output, x, threshold):
    # zeros_like, not a 0-dim zero: the where kernel has a fast path for contiguous operands only
    return ember.where(x <= threshold, ember.zeros_like(grad_output), grad_output)


# ---- numpy references (float64 in the tests) -------------------------------------------------
def _np_gelu_backward(grad_output, x, approximate="none"):
    if approximate == "tanh":
        t = np.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x**3))
        d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
        return grad_output * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * d_inner)
    cdf = 0.5 * (1 + _erf(x / math.sqrt(2)))
    return grad_output * (cdf + x * np.exp(-0.5 * x * x) * _INV_SQRT_2PI)


def _np_silu_backward(grad_output, x):
    s = 1 / (1 + np.exp(-x))
    return grad_output * s * (1 + x * (1 - s))


def _np_threshold_backward(grad_output, x, threshold):
    return np.where(x <= threshold, np.zeros_like(grad_output), grad_output)


# ---- runners: binary elementwise, the parameter always passed ---------------------------------
def _check_gelu(grad_output, x, approximate="none"):
    if approximate not in _GELU_FORMS:
        raise RuntimeError(
            f"gelu_backward: approximate argument must be either none or tanh, got {approximate!r}"
        )


def _with_param(default):
    """run.binary with the op's parameter always given: its fast path, keyed by dtype alone,
    is kept for calls without one, and these must not reach a kernel without theirs."""

    def runner(op, grad_output, x, param=default):
        return run.binary(op, grad_output, x, param)

    # what it is, for a compiled program that calls the kernel itself when its parameter is a
    # known constant (compiler/replay.py _plain_kernel)
    runner.elementwise = run.binary
    return runner


def backward_row(schema, reference, decomposition, dtypes=DTYPES_FLOAT, **kw) -> OpDef:
    return OpDef(
        schema,
        Kind.ELEMENTWISE,
        reference,
        promotion=kw.pop("promotion", Promotion.FLOAT_ONLY),
        dtypes=dtypes,
        decomposition=decomposition,
        runner=kw.pop("runner", run.binary),
        function=False,
        method=False,
        out=None,
        samples=kw.pop("samples", "activation_backward"),
        attrs={"arity": 2, **kw.pop("attrs", {})},
        kernel_args="(out, grad_output, x, *params): operands broadcast to out, compute dtype",
        **kw,
    )


ROWS = [
    backward_row(
        "gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
        _np_gelu_backward,
        _gelu_backward,
        runner=_with_param("none"),
        # the check reads the parameter alone: a program can run it once, on its constant
        attrs={"check": _check_gelu, "check_reads_params": True},
        samples="gelu_backward",
        # 1 - tanh^2 cancels in float32 where tanh nears 1: a device whose float tanh is a few
        # ulp off (OpenCL's) is 3e-5 off there, the fused CPU kernel is not
        tolerances={dt.float32: (2e-5, 5e-5)},
        notes="grad * (Phi(x) + x phi(x)), or the tanh form's derivative",
    ),
    backward_row(
        "silu_backward(Tensor grad_output, Tensor self) -> Tensor",
        _np_silu_backward,
        _silu_backward,
        notes="grad * s (1 + x (1 - s)), s = sigmoid(x)",
    ),
    backward_row(
        "sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
        _sigmoid_backward,
        _sigmoid_backward,
        samples="sigmoid_backward",
        notes="grad * (1 - y) * y from sigmoid's output y",
    ),
    backward_row(
        "tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
        _tanh_backward,
        _tanh_backward,
        samples="tanh_backward",
        notes="grad * (1 - y^2) from tanh's output y",
    ),
    backward_row(
        "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
        _np_threshold_backward,
        _threshold_backward,
        dtypes=DTYPES_NUMERIC,
        promotion=Promotion.DEFAULT,
        runner=_with_param(0.0),
        samples="threshold_backward",
        notes="grad where x > threshold, else 0 (relu's backward, from its result, threshold 0)",
    ),
]
