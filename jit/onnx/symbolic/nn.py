"""Neural-network ops: convolution, im2col/col2im, max pooling, layer norm.

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


def _pair(value) -> list[int]:
    """Two ints from an int or a list of one or two. Sizes computed at run time give their
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
    return items * 2 if len(items) == 1 else items


def _batched(g, x, rule):
    """Run ``rule`` on a 4-d input; an unbatched 3-d input gets a batch dim of 1 around it."""
    if x.rank == 3:
        out = rule(g.unsqueeze(x, 0))
        return g.op("Squeeze", out, g.const([0], dt.int64))
    return rule(x)


def _conv(g, x4, weight, bias, stride, padding, dilation, groups: int, kernel: list):
    pads = _pair(padding)
    return g.op(
        "Conv",
        x4,
        weight,
        bias,
        strides=_pair(stride),
        pads=pads + pads,
        dilations=_pair(dilation),
        group=groups,
        kernel_shape=kernel,
    )


def conv2d(g, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    kernel = list(weight.sizes[2:])

    def rule(x4):
        return _conv(g, x4, weight, bias, stride, padding, dilation, groups, kernel)

    return _batched(g, x, rule)


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
    "conv2d": conv2d,
    "im2col": im2col,
    "col2im": col2im,
    "max_pool2d_with_indices": max_pool2d_with_indices,
    "layer_norm": layer_norm,
}
