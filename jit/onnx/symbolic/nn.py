"""Neural-network ops: linear, convolutions, im2col/col2im, max pooling, layer norm.

``im2col`` (what ember's average pooling and 1-d convolutions are written in) has no ONNX op; it
is a grouped convolution whose kernels are one-hot (each output channel copies one kernel
position of one input channel), followed by a reshape: exact, since every output is one input
times 1 plus zeros.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt

from ..builder import V, static_int
from ..errors import OnnxExporterError


def _ints(value, n: int = 2) -> list[int]:
    """``n`` ints from an int or a list of one or ``n``. Sizes computed at run time give their
    traced values: ONNX takes kernel sizes, strides and pads as attributes (PyTorch's tracer
    bakes them in the same way)."""
    if isinstance(value, V) and isinstance(value.traced, list):  # an int[] built at run time
        value = value.traced
    items = [value] if isinstance(value, (int, V)) else list(value)
    items = [static_int(v) for v in items]
    if None in items:
        raise OnnxExporterError(
            "ONNX export: a kernel size, stride or padding is unknown at export time"
        )
    return items * n if len(items) == 1 else items


def _pair(value) -> list[int]:
    return _ints(value, 2)


def _pads(padding, kernel: list, dilation: list) -> list[int]:
    """ONNX's ``pads`` (all begins, then all ends); 'same' puts the odd one at the end, as
    PyTorch pads the input."""
    if padding == "valid":
        return [0] * 2 * len(kernel)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [t // 2 for t in totals] + [t - t // 2 for t in totals]
    pads = _ints(padding, len(kernel))
    return pads + pads


def _batched(g, x, rule, spatial: int = 2):
    """Run ``rule`` on a batched input; an unbatched one gets a batch dim of 1 around it."""
    if x.rank == spatial + 1:
        out = rule(g.unsqueeze(x, 0))
        return g.op("Squeeze", out, g.const([0], dt.int64))
    return rule(x)


def _conv(g, x, weight, bias, stride, padding, dilation, groups: int, kernel: list):
    n = len(kernel)
    dilations = _ints(dilation, n)
    return g.op(
        "Conv",
        x,
        weight,
        bias,
        strides=_ints(stride, n),
        pads=_pads(padding, kernel, dilations),
        dilations=dilations,
        group=groups,
        kernel_shape=kernel,
    )


def _operands(g, x, weight, bias):
    """The operands in the node's output dtype (ONNX convolutions take one float type)."""
    out = g.out_dtype()
    return g.cast(x, out), g.cast(weight, out), None if bias is None else g.cast(bias, out)


def convolution(g, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """``Conv`` for conv1d and conv2d (the spatial rank is the weight's)."""
    x, weight, bias = _operands(g, x, weight, bias)
    kernel = list(weight.sizes[2:])

    def rule(batched):
        return _conv(g, batched, weight, bias, stride, padding, dilation, groups, kernel)

    return _batched(g, x, rule, len(kernel))


def conv_transpose2d(
    g, x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    x, weight, bias = _operands(g, x, weight, bias)
    kernel = list(weight.sizes[2:])
    n = len(kernel)
    dilations = _ints(dilation, n)

    def rule(batched):
        return g.op(
            "ConvTranspose",
            batched,
            weight,
            bias,
            strides=_ints(stride, n),
            pads=_pads(padding, kernel, dilations),
            output_padding=_ints(output_padding, n),
            dilations=dilations,
            group=groups,
            kernel_shape=kernel,
        )

    return _batched(g, x, rule, n)


def linear(g, x, weight, bias=None):
    """``Gemm`` for a 2-d input with a bias, else ``MatMul`` by the transposed weight and
    ``Add``, as PyTorch's symbolic writes it."""
    x, weight, bias = _operands(g, x, weight, bias)
    if x.rank == 2 and bias is not None:
        return g.op("Gemm", x, weight, bias, transB=1)
    product = g.op("MatMul", x, g.op("Transpose", weight, perm=[1, 0]))
    return product if bias is None else g.op("Add", product, bias)


def im2col(g, x, kernel_size, dilation, padding, stride):
    if x.dtype.category != dt.FLOATING:
        raise g.unsupported(f"im2col of {x.dtype} (ONNX convolutions take floats)")
    channels = x.sizes[-3]
    kh, kw = _pair(kernel_size)
    eye = np.eye(kh * kw, dtype=x.dtype.np).reshape(kh * kw, 1, kh, kw)
    weight = g.const(np.tile(eye, (channels, 1, 1, 1)), x.dtype)

    def rule(x4):
        cols = _conv(g, x4, weight, None, stride, padding, dilation, channels, [kh, kw])
        blocks = g.const([channels * kh * kw, -1], dt.int64)
        return g.op("Reshape", cols, g.op("Concat", g.dims(x4, 0, 1), blocks, axis=0))

    return _batched(g, x, rule)


def col2im(g, x, output_size, kernel_size, dilation, padding, stride):
    g.require(18)
    pads = _pair(padding)
    return g.op(
        "Col2Im",
        x,
        g.ints(_pair(output_size) if isinstance(output_size, (int, list, tuple)) else output_size),
        g.ints(_pair(kernel_size)),
        dilations=_pair(dilation),
        pads=pads + pads,
        strides=_pair(stride),
    )


def max_pool2d_with_indices(g, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``MaxPool``; its indices count over the whole tensor, PyTorch's within each (n, c)
    plane, so when they are used the plane's first index (a 1x1 pool's) is subtracted."""
    kernel = _pair(kernel_size)
    strides = _pair(stride) if stride else kernel
    pads = _pair(padding)
    want_indices = bool(g.node.outputsAt(1).uses())

    def rule(x4):
        return g.op(
            "MaxPool",
            x4,
            outputs=2 if want_indices else 1,
            kernel_shape=kernel,
            strides=strides,
            pads=pads + pads,
            dilations=_pair(dilation),
            ceil_mode=int(bool(ceil_mode)),
        )

    if not want_indices:
        return _batched(g, x, rule), None
    if x.rank == 3:
        raise g.unsupported("max pooling indices of an unbatched input")
    values, indices = rule(x)
    _, flat = g.op("MaxPool", x, outputs=2, kernel_shape=[1, 1], strides=[1, 1])
    corner = g.op(
        "Slice",
        flat,
        g.const([0, 0], dt.int64),
        g.const([1, 1], dt.int64),
        g.const([2, 3], dt.int64),
    )
    indices.dtype = flat.dtype = corner.dtype = dt.int64
    return values, g.op("Sub", indices, corner)


def layer_norm(g, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    x = g.cast(x, g.out_dtype())
    count = len(normalized_shape) if isinstance(normalized_shape, (list, tuple)) else None
    if count is None:
        count = normalized_shape.sizes[0]
    if weight is None:
        one = g.onnx.numpy_helper.from_array(np.ones(1, dtype=x.dtype.np))
        weight = g.op("ConstantOfShape", g.ints(normalized_shape), value=one, dtype=x.dtype)
    return g.op(
        "LayerNormalization",
        x,
        g.cast(weight, x.dtype),
        None if bias is None else g.cast(bias, x.dtype),
        axis=-count,
        epsilon=eps,
    )


TABLE = {
    "linear": linear,
    "conv1d": convolution,
    "conv2d": convolution,
    "conv_transpose2d": conv_transpose2d,
    "im2col": im2col,
    "col2im": col2im,
    "max_pool2d_with_indices": max_pool2d_with_indices,
    "layer_norm": layer_norm,
}
