"""Convolution as one row: ``conv2d`` is a composite over im2col and one matmul.

A row rather than only a function of ``nn.functional`` so that graphs hold one ``conv2d`` node
per convolution (as PyTorch's hold ``aten::conv2d``): passes fold batch norms into it, a
compiler can call a convolution library for it, an exporter maps it to one Conv, and a backend
may give it a fused kernel. Its gradient comes from its parts.
"""

from __future__ import annotations

import numpy as np

from ..opdef import DTYPES_FLOAT, Kind, OpDef
from .nn import _np_im2col


def _conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    from ember.nn.functional.conv import conv2d_im2col  # the functional layer owns the checks

    return conv2d_im2col(input, weight, bias, stride, padding, dilation, groups)


def _pair(value) -> tuple:
    return (value, value) if isinstance(value, int) else tuple(value)


def _np_same_padding(x, kernel, dilation):
    """PyTorch's padding='same': total ``dilation * (kernel - 1)`` per dim, the odd one at the
    end."""
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, ((0, 0), (0, 0), *pads))


def _np_conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    unbatched = x.ndim == 3
    x = x[None] if unbatched else x
    stride, dilation = _pair(stride), _pair(dilation)
    kernel = weight.shape[2:]
    if padding == "same":
        x, padding = _np_same_padding(x, kernel, dilation), (0, 0)
    padding = (0, 0) if padding == "valid" else _pair(padding)
    n, out_c = x.shape[0], weight.shape[0]
    per_in, per_out = x.shape[1] // groups, out_c // groups
    outs = []
    for g in range(groups):
        part = x[:, g * per_in : (g + 1) * per_in]
        cols = _np_im2col(part, kernel, dilation, padding, stride)
        w = weight[g * per_out : (g + 1) * per_out].reshape(per_out, -1)
        outs.append(np.einsum("ok,nkl->nol", w, cols))
    h = (x.shape[2] + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    out = np.concatenate(outs, 1).reshape(n, out_c, h, -1)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out[0] if unbatched else out


ROWS = [
    OpDef(
        "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[] stride=1, "
        "int[] padding=0, int[] dilation=1, int groups=1) -> Tensor",
        Kind.CONV,
        _np_conv2d,
        dtypes=DTYPES_FLOAT,
        decomposition=_conv2d,
        method=False,
        samples="conv2d",
        notes="nn.functional.conv2d; padding may also be 'same' or 'valid'",
    ),
]
