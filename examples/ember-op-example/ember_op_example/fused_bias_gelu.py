"""``gelu(input + bias)``: the kernel glue, the shape rule, the gradient and a numpy reference.

Kernels follow ember's calling convention, ``kernel(out, *inputs, *params)``: ``out`` is allocated
from ``shape``; inputs arrive contiguous on the device; a kernel reads only the documented tensor
attributes (``_storage.ptr``, ``_offset``, ``_shape``, ``_dtype``). The gradient and the
decomposition are written with Tensor methods, so they run on every device ember has.
"""

from __future__ import annotations

import math

import numpy as np

SQRT1_2 = 1 / math.sqrt(2)
INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
TANH_K = math.sqrt(2 / math.pi)
TANH_C = 0.044715
APPROXIMATIONS = ("none", "tanh")


def shape(input, bias, approximate="none"):
    """Output shaped like ``input``; refuses what the kernel cannot take, naming the shapes."""
    if approximate not in APPROXIMATIONS:
        raise ValueError(
            f"fused_bias_gelu: approximate must be 'none' or 'tanh', not {approximate!r}"
        )
    if bias.ndim != 1 or input.ndim == 0 or input.shape[-1] != bias.shape[0]:
        raise RuntimeError(
            "fused_bias_gelu: bias must be 1-D with input.shape[-1] elements; got input "
            f"{list(input.shape)} and bias {list(bias.shape)}"
        )
    if input.dtype is not bias.dtype:
        raise RuntimeError(
            f"fused_bias_gelu: input and bias dtypes differ ({input.dtype}, {bias.dtype})"
        )
    return input


def _kernel(suffix: str):
    c_function = []  # filled on the first call: registration must not load native code

    def kernel(out, input, bias, approximate):
        if not c_function:
            from . import _kernels  # the library compiled at install time

            c_function.append(getattr(_kernels.lib, f"fused_bias_gelu_{suffix}"))
        itemsize = out._dtype.itemsize
        cols = bias._shape[0]
        status = c_function[0](
            out._storage.ptr + out._offset * itemsize,
            input._storage.ptr + input._offset * itemsize,
            bias._storage.ptr + bias._offset * itemsize,
            math.prod(out._shape) // cols,
            cols,
            approximate == "tanh",
        )
        if status:
            raise RuntimeError(f"fused_bias_gelu: kernel failed with status {status}")

    kernel.__qualname__ = f"fused_bias_gelu_{suffix}"
    return kernel


kernel_f32 = _kernel("f32")
kernel_f64 = _kernel("f64")


def decomposition(input, bias, approximate="none"):
    shape(input, bias, approximate)  # the same errors as the kernel path
    return (input + bias).gelu(approximate=approximate)


def setup_context(ctx, inputs, output):
    input, bias, approximate = inputs
    ctx.save_for_backward(input, bias)
    ctx.approximate = approximate


def backward(ctx, grad):
    input, bias = ctx.saved_tensors
    v = input + bias
    if ctx.approximate == "tanh":
        t = (TANH_K * (v + TANH_C * v * v * v)).tanh()
        slope = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * TANH_K * (1 + 3 * TANH_C * v * v)
    else:
        slope = 0.5 * (1 + (v * SQRT1_2).erf()) + v * (-0.5 * v * v).exp() * INV_SQRT_2PI
    grad_input = grad * slope
    grad_bias = grad_input.reshape(-1, bias.shape[0]).sum(0)
    return grad_input, grad_bias, None


_erf = np.vectorize(math.erf, otypes=[np.float64])


def reference(input, bias, approximate="none"):
    """numpy, in float64, for ``ember.library.opcheck``."""
    v = input.astype(np.float64) + bias.astype(np.float64)
    if approximate == "tanh":
        out = 0.5 * v * (1 + np.tanh(TANH_K * (v + TANH_C * v**3)))
    else:
        out = 0.5 * v * (1 + _erf(v * SQRT1_2))
    return out.astype(input.dtype)
