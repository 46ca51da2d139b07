"""Glue for the fused nn kernels (clc/nn.cl): softmax, log_softmax, im2col, col2im and
max_pool2d_with_indices. ember decomposes these ops into primitives when a backend has no kernel;
fusing them saves the intermediate tensors and launches (a convolution is im2col + GEMM, its
input gradient GEMM + col2im).

Calling conventions (ember/dispatcher/kinds/nn.py): ``softmax(out, x, dim)``;
``im2col(out, x, kernel, dilation, padding, stride)`` with x (N, C, H, W) and out
(N, C*kh*kw, L); ``col2im(out, cols, kernel, dilation, padding, stride)`` with out
(N, C, H, W); ``max_pool2d_with_indices(values, indices, x, kernel, stride, padding, dilation)``
with x (N, C, H, W) or (C, H, W). Outputs are fresh and contiguous; inputs any strides.
"""

from __future__ import annotations

import math

from ..programs import source
from ._launch import DTYPE_NAMES, MAX_DIMS, TOKENS, device_of, merge_dims, offset, pack

SHORT_LINE = 64  # softmax lines up to this length run one work-item each


def _kernels(dev, code: int) -> dict:
    token = TOKENS[code]
    return dev.programs.get(
        ("nn", token),
        lambda: f"#define T {token}\n#define LOCAL {dev.local_size}\n" + source("nn.cl"),
    )


def _make_softmax(runtime, name: str, log_out: int):
    def kernel(out, x, dim):
        dev = device_of(runtime, x)
        kernels = _kernels(dev, x._dtype.code)
        other = [d for d in range(len(x._shape)) if d != dim]
        lshape, (xl, ol) = merge_dims(
            tuple(x._shape[d] for d in other),
            [tuple(x._stride[d] for d in other), tuple(out._stride[d] for d in other)],
        )
        if len(lshape) > MAX_DIMS:
            raise RuntimeError(f"{name}: more than {MAX_DIMS} dims besides dim {dim} once merged")
        lines, n = math.prod(lshape), x._shape[dim]
        args = (
            out._storage.handle, offset(out), x._storage.handle, offset(x), pack(lshape),
            pack(xl), pack(ol), len(lshape), lines, n, x._stride[dim], out._stride[dim], log_out,
        )  # fmt: skip
        if n <= SHORT_LINE:
            dev.launch(kernels["softmax_items"], lines, *args)
        else:
            groups = kernels["softmax_groups"]
            count = min(lines, dev.max_groups)
            groups.fn(dev.queue, (count * groups.local,), (groups.local,), *args)

    kernel.__qualname__ = f"xpu.{name}"
    return kernel


def _window(x_shape, kernel, dilation, padding, stride, out_hw, total) -> tuple:
    c, h, w = x_shape[-3:]
    return (c, h, w, *kernel, *dilation, *padding, *stride, *out_hw, total)


def build(runtime) -> dict:
    def unfold_kernel(name, out, src, image, kernel, dilation, padding, stride):
        """im2col (``image`` is the source) or col2im (``image`` is the output): one work-item
        per element of ``out``, reading ``src`` through its strides."""
        dev = device_of(runtime, src)
        total = math.prod(out._shape)
        h, w = image._shape[-2:]
        out_hw = _out_hw(h, w, kernel, dilation, padding, stride)
        dev.launch(
            _kernels(dev, src._dtype.code)[name], total, out._storage.handle, offset(out),
            src._storage.handle, offset(src), *src._stride,
            *_window(image._shape, kernel, dilation, padding, stride, out_hw, total),
        )  # fmt: skip

    def im2col(out, x, kernel, dilation, padding, stride):
        unfold_kernel("im2col", out, x, x, kernel, dilation, padding, stride)

    def col2im(out, cols, kernel, dilation, padding, stride):
        unfold_kernel("col2im", out, cols, out, kernel, dilation, padding, stride)

    def max_pool2d(values, indices, x, kernel, stride, padding, dilation):
        dev = device_of(runtime, x)
        total = math.prod(values._shape)
        sn = x._stride[0] if len(x._shape) == 4 else 0
        sc, sh, sw = x._stride[-3:]
        dev.launch(
            _kernels(dev, x._dtype.code)["max_pool2d"], total, values._storage.handle,
            offset(values), indices._storage.handle, offset(indices), x._storage.handle,
            offset(x), sn, sc, sh, sw,
            *_window(x._shape, kernel, dilation, padding, stride, values._shape[-2:], total),
        )  # fmt: skip

    floats = DTYPE_NAMES[6:]
    kernels = {
        "softmax": _make_softmax(runtime, "softmax", 0),
        "log_softmax": _make_softmax(runtime, "log_softmax", 1),
        "im2col": im2col,
        "col2im": col2im,
        "max_pool2d_with_indices": max_pool2d,
    }
    for name in ("im2col", "col2im", "max_pool2d_with_indices"):
        kernels[name].__qualname__ = f"xpu.{name}"
    return {name: dict.fromkeys(floats, fn) for name, fn in kernels.items()}


def _out_hw(h: int, w: int, kernel, dilation, padding, stride) -> tuple[int, int]:
    """Output positions of a convolution window (no ceil mode: im2col/col2im)."""
    return tuple(
        (size + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
        for i, size in enumerate((h, w))
    )
