"""Glue for the fused nn kernels: softmax/log_softmax, layer_norm, im2col/col2im, max_pool2d.

The core's runners pass contiguous inputs for these ops (their rows' kernel_args say so).
"""

from __future__ import annotations

import math

from ._args import DTYPE_NAMES, raise_status

FLOATS = DTYPE_NAMES[6:]


def _addr(t) -> int:
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _optional(t) -> int:
    return 0 if t is None else _addr(t)


def _geometry(x_shape, out_hw, kernel, dilation, padding, stride) -> list:
    n, c, h, w = x_shape
    return [n, c, h, w, out_hw[0], out_hw[1], kernel[0], kernel[1], dilation[0], dilation[1],
            padding[0], padding[1], stride[0], stride[1]]  # fmt: skip


def build(ffi, lib) -> dict:
    def softmax(log: int):
        def kernel(out, x, dim):
            shape = x._shape
            outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
            status = lib.ember_softmax(
                x._dtype.code, _addr(out), _addr(x), outer, shape[dim], inner, log
            )
            if status:
                raise_status(status, "log_softmax" if log else "softmax", x._dtype.code)

        return kernel

    def softmax_backward(log: int):
        def kernel(out, grad, y, dim):
            shape = y._shape
            outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
            status = lib.ember_softmax_backward(
                y._dtype.code, _addr(out), _addr(grad), _addr(y), outer, shape[dim], inner, log
            )
            if status:
                name = "_log_softmax_backward_data" if log else "_softmax_backward_data"
                raise_status(status, name, y._dtype.code)

        return kernel

    def layer_norm(out, x, normalized_shape, weight, bias, eps, mean=None, rstd=None):
        n = math.prod(normalized_shape)
        rows = math.prod(x._shape) // n if n else 0
        status = lib.ember_layer_norm(
            x._dtype.code,
            _addr(out),
            _optional(mean),
            _optional(rstd),
            _addr(x),
            rows,
            n,
            _optional(weight),
            _optional(bias),
            eps,
        )
        if status:
            raise_status(status, "layer_norm", x._dtype.code)

    def native_layer_norm(out, mean, rstd, x, normalized_shape, weight, bias, eps):
        layer_norm(out, x, normalized_shape, weight, bias, eps, mean, rstd)

    def layer_norm_backward(grads, grad_out, x, mean, rstd, weight):
        """grads: (input, weight, bias) gradients to write, None where not wanted; mean and
        rstd have one element per row (x's leading dims)."""
        rows = math.prod(mean._shape)
        status = lib.ember_layer_norm_backward(
            x._dtype.code,
            *(_optional(g) for g in grads),
            _addr(grad_out),
            _addr(x),
            _addr(mean),
            _addr(rstd),
            _optional(weight),
            rows,
            math.prod(x._shape) // rows if rows else 0,
        )
        if status:
            raise_status(status, "native_layer_norm_backward", x._dtype.code)

    def im2col(cols, x, kernel, dilation, padding, stride):
        oh_ow = cols._shape[-1]
        h = x._shape[2]
        oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        geometry = _geometry(x._shape, (oh, oh_ow // oh), kernel, dilation, padding, stride)
        status = lib.ember_im2col(x._dtype.code, _addr(cols), _addr(x), geometry)
        if status:
            raise_status(status, "im2col", x._dtype.code)

    def col2im(out, cols, kernel, dilation, padding, stride):
        h = out._shape[2]
        oh = (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
        ow = cols._shape[2] // oh
        geometry = _geometry(out._shape, (oh, ow), kernel, dilation, padding, stride)
        status = lib.ember_col2im(out._dtype.code, _addr(out), _addr(cols), geometry)
        if status:
            raise_status(status, "col2im", out._dtype.code)

    def max_pool2d(values, indices, x, kernel, stride, padding, dilation):
        shape = x._shape if len(x._shape) == 4 else (1,) + x._shape
        oh, ow = values._shape[-2:]
        geometry = _geometry(shape, (oh, ow), kernel, dilation, padding, stride)
        status = lib.ember_max_pool2d(
            x._dtype.code, _addr(values), _addr(indices), _addr(x), geometry
        )
        if status:
            raise_status(status, "max_pool2d_with_indices", x._dtype.code)

    return {
        "softmax": dict.fromkeys(FLOATS, softmax(0)),
        "log_softmax": dict.fromkeys(FLOATS, softmax(1)),
        "_softmax_backward_data": dict.fromkeys(FLOATS, softmax_backward(0)),
        "_log_softmax_backward_data": dict.fromkeys(FLOATS, softmax_backward(1)),
        "layer_norm": dict.fromkeys(FLOATS, layer_norm),
        "native_layer_norm": dict.fromkeys(FLOATS, native_layer_norm),
        "native_layer_norm_backward": dict.fromkeys(FLOATS, layer_norm_backward),
        "im2col": dict.fromkeys(FLOATS, im2col),
        "col2im": dict.fromkeys(FLOATS, col2im),
        "max_pool2d_with_indices": dict.fromkeys(FLOATS, max_pool2d),
    }
