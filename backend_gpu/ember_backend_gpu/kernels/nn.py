"""Glue for the fused nn kernels: softmax/log_softmax (``kernel(out, x, dim)``), im2col and
col2im (``kernel(out, x, kernel, dilation, padding, stride)``) and max_pool2d_with_indices
(``kernel(values, indices, x, kernel, stride, padding, dilation)``); the runners in
ember/dispatcher/kinds/nn.py have checked the shapes and allocated contiguous outputs."""

from __future__ import annotations

import math

from .. import launch
from ._args import TOKENS, addr, dims


def _pooled(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _conv(n, c, h, w, oh, ow, k, s, p, d, strides) -> tuple:
    """The em_conv struct."""
    return (n, c, h, w, oh, ow, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], 0, 0, *strides)


def build(rt) -> dict:
    def make_softmax(log: bool):
        def softmax(out, x, dim):
            dev = out._storage.device.index or 0
            shape, xs = dims(x)
            _, os_ = dims(out)
            args, blocks, threads = launch.rows_plan(shape, dim, xs, os_, rt.sm_count(dev))
            rt.launch(
                dev,
                f"em_softmax_{TOKENS[x._dtype.code]}",
                blocks,
                threads,
                addr(out),
                addr(x),
                *args,
                int(log),
            )

        softmax.__qualname__ = "cuda.log_softmax" if log else "cuda.softmax"
        return softmax

    def im2col(out, x, kernel, dilation, padding, stride):
        dev = out._storage.device.index or 0
        n, c, h, w = x._shape
        oh, ow = (
            _pooled(size, kernel[i], stride[i], padding[i], dilation[i])
            for i, size in enumerate((h, w))
        )
        conv = _conv(n, c, h, w, oh, ow, kernel, stride, padding, dilation, dims(x)[1])
        total = math.prod(out._shape)
        if total:
            rt.launch_1d(
                dev, f"em_im2col_{TOKENS[x._dtype.code]}", total, addr(out), addr(x), *conv
            )

    def col2im(out, cols, kernel, dilation, padding, stride):
        dev = out._storage.device.index or 0
        n, c, h, w = out._shape
        oh, ow = (
            _pooled(size, kernel[i], stride[i], padding[i], dilation[i])
            for i, size in enumerate((h, w))
        )
        conv = _conv(n, c, h, w, oh, ow, kernel, stride, padding, dilation, (*dims(cols)[1], 0))
        total = math.prod(out._shape)
        if total:
            rt.launch_1d(
                dev, f"em_col2im_{TOKENS[cols._dtype.code]}", total, addr(out), addr(cols), *conv
            )

    def max_pool2d(values, indices, x, kernel, stride, padding, dilation):
        dev = values._storage.device.index or 0
        strides = dims(x)[1]
        if len(x._shape) == 3:
            (c, h, w), n, strides = x._shape, 1, (0, *strides)
        else:
            n, c, h, w = x._shape
        oh, ow = values._shape[-2:]
        conv = _conv(n, c, h, w, oh, ow, kernel, stride, padding, dilation, strides)
        total = math.prod(values._shape)
        if total:
            rt.launch_1d(
                dev,
                f"em_max_pool2d_{TOKENS[x._dtype.code]}",
                total,
                addr(values),
                addr(indices),
                addr(x),
                *conv,
            )

    floats = ("float16", "bfloat16", "float32", "float64")
    return {
        "softmax": dict.fromkeys(floats, make_softmax(False)),
        "log_softmax": dict.fromkeys(floats, make_softmax(True)),
        "im2col": dict.fromkeys(floats, im2col),
        "col2im": dict.fromkeys(floats, col2im),
        "max_pool2d_with_indices": dict.fromkeys(floats, max_pool2d),
    }
