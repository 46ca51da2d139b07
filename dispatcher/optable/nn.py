"""nn ops with their own rows: softmax family, im2col/col2im (unfold/fold), max pooling, padding.

Each has a decomposition (so any device runs it), a runner that prefers a fused kernel, and an
autograd formula (autograd/formulas.py), so the graph holds one node per call.
"""

from __future__ import annotations

import functools

import numpy as np

import ember

from ..kinds import nn as run
from ..opdef import DTYPES_FLOAT, OUT_EXACT, Kind, OpDef


def _shifted(x, dim):
    """``x`` less its max along ``dim`` (for exp's range); an empty ``x`` as it is, since amax
    refuses an empty dim where PyTorch's softmax returns an empty result."""
    return x - ember.amax(x, dim, keepdim=True) if x.numel() else x


def _softmax(x, dim):
    e = ember.exp(_shifted(x, dim))
    return e / ember.sum(e, dim, keepdim=True)


def _log_softmax(x, dim):
    shifted = _shifted(x, dim)
    return shifted - ember.log(ember.sum(ember.exp(shifted), dim, keepdim=True))


def _normalized_dims(ndim: int, normalized_shape) -> tuple:
    return tuple(range(ndim - len(normalized_shape), ndim))


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    if x.dtype in (ember.float16, ember.bfloat16):  # statistics in float32, as PyTorch's
        up = [None if t is None else t.float() for t in (x, weight, bias)]
        return _layer_norm(up[0], normalized_shape, up[1], up[2], eps).to(x.dtype)
    dims = _normalized_dims(x.ndim, normalized_shape)
    centred = x - ember.mean(x, dims, keepdim=True)
    out = centred * ember.rsqrt(ember.mean(centred * centred, dims, keepdim=True) + eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


def _np_layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    dims = _normalized_dims(x.ndim, normalized_shape)
    centred = x - x.mean(dims, keepdims=True)
    out = centred / np.sqrt((centred * centred).mean(dims, keepdims=True) + eps)
    if weight is not None:
        out = out * weight
    return (out if bias is None else out + bias).astype(x.dtype)


def _np_softmax(x, dim, dtype=None):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return e / np.sum(e, axis=dim, keepdims=True)


def _np_log_softmax(x, dim, dtype=None):
    shifted = x - np.max(x, axis=dim, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))


def _windows(x, kernel, dilation, stride, out_hw):
    """A (N, C, kh, kw, oh, ow) view of the sliding windows of a padded (N, C, H, W) tensor."""
    sn, sc, sh, sw = x.stride()
    return x.as_strided(
        (x.shape[0], x.shape[1], kernel[0], kernel[1], out_hw[0], out_hw[1]),
        (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1]),
        x.storage_offset(),
    )


def _out_hw(h, w, kernel, stride, padding, dilation, ceil_mode=False):
    return tuple(
        run.pooled_size(size, kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
        for i, size in enumerate((h, w))
    )


def _im2col(x, kernel, dilation, padding, stride):
    padded = ember.ops.constant_pad_nd(x, (padding[1], padding[1], padding[0], padding[0]), 0)
    out_hw = _out_hw(x.shape[2], x.shape[3], kernel, stride, padding, dilation)
    windows = _windows(padded, kernel, dilation, stride, out_hw)
    n, c = x.shape[0], x.shape[1]
    return windows.reshape(n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1])


@functools.lru_cache(maxsize=64)
def _col2im_index(c, hp, wp, kernel, dilation, stride, out_hw, device):
    """Flat positions in a padded (C, Hp, Wp) image of each element of a (C*kh*kw, L) column.
    Cached per geometry, like the pooling positions: the same layer asks every step."""
    ch = ember.arange(c, device=device).view(c, 1, 1, 1, 1) * (hp * wp)
    ki = ember.arange(kernel[0], device=device).view(1, kernel[0], 1, 1, 1) * dilation[0]
    kj = ember.arange(kernel[1], device=device).view(1, 1, kernel[1], 1, 1) * dilation[1]
    oi = ember.arange(out_hw[0], device=device).view(1, 1, 1, out_hw[0], 1) * stride[0]
    oj = ember.arange(out_hw[1], device=device).view(1, 1, 1, 1, out_hw[1]) * stride[1]
    return (ch + (ki + oi) * wp + (kj + oj)).reshape(-1)


def _col2im(cols, output_size, kernel, dilation, padding, stride):
    n = cols.shape[0]
    c = cols.shape[1] // (kernel[0] * kernel[1])
    h, w = output_size
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    out_hw = _out_hw(h, w, kernel, stride, padding, dilation)
    index = _col2im_index(
        c, hp, wp, tuple(kernel), tuple(dilation), tuple(stride), out_hw, str(cols.device)
    )
    flat = ember.zeros(n, c * hp * wp, dtype=cols.dtype, device=cols.device)
    flat = flat.index_add(1, index, cols.reshape(n, cols.shape[1] * cols.shape[2]))
    return flat.view(n, c, hp, wp).narrow(2, padding[0], h).narrow(3, padding[1], w).contiguous()


@functools.lru_cache(maxsize=64)
def _pool_positions(w, out_hw, kernel, stride, padding, dilation, device):
    """Flat (H*W) input positions for max pooling: each window's top-left corner (oh, ow) and
    each kernel cell's offset from it (kh*kw,). Cached per geometry: rebuilding them from
    aranges, divisions and remainders cost more than the pooling itself."""
    rows = ember.arange(out_hw[0], device=device).view(-1, 1) * stride[0] - padding[0]
    cols = ember.arange(out_hw[1], device=device) * stride[1] - padding[1]
    cells = [
        i * dilation[0] * w + j * dilation[1] for i in range(kernel[0]) for j in range(kernel[1])
    ]
    return rows * w + cols, ember.tensor(cells, device=device)


def _max_pool2d(x, kernel, stride, padding, dilation, ceil_mode):
    batched = x.ndim == 4
    if not batched:
        x = x.unsqueeze(0)
    n, c, h, w = x.shape
    out_hw = _out_hw(h, w, kernel, stride, padding, dilation, ceil_mode)
    # Pad enough on the right for ceil_mode windows, with -inf so padding never wins.
    need_h = (out_hw[0] - 1) * stride[0] + dilation[0] * (kernel[0] - 1) + 1 - h - padding[0]
    need_w = (out_hw[1] - 1) * stride[1] + dilation[1] * (kernel[1] - 1) + 1 - w - padding[1]
    pads = (padding[1], max(need_w, 0), padding[0], max(need_h, 0))
    padded = ember.ops.constant_pad_nd(x, pads, float("-inf"))
    windows = _windows(padded, kernel, dilation, stride, out_hw)
    flat = windows.permute(0, 1, 4, 5, 2, 3).reshape(n, c, *out_hw, kernel[0] * kernel[1])
    values, local = ember.max(flat, -1)
    corners, cells = _pool_positions(
        w, out_hw, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), str(x.device)
    )
    index = corners + cells.take(local)
    if not batched:
        values, index = values.squeeze(0), index.squeeze(0)
    from ember.return_types import ValuesIndices

    return ValuesIndices(values, index)


def _np_windows(x, kernel, dilation, padding, stride, fill=0.0, ceil_mode=False):
    """(N, C, kh, kw, oh, ow) windows of a (N, C, H, W) array, padded with ``fill``."""
    h, w = x.shape[-2:]
    out_hw = _out_hw(h, w, kernel, stride, padding, dilation, ceil_mode)
    extra = [max(0, (out_hw[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
                 - (h, w)[i] - padding[i]) for i in range(2)]  # fmt: skip
    padded = np.pad(x, ((0, 0), (0, 0), (padding[0], extra[0]), (padding[1], extra[1])),
                    constant_values=fill)  # fmt: skip
    windows = np.empty(x.shape[:2] + tuple(kernel) + out_hw, dtype=x.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows = slice(
                i * dilation[0], i * dilation[0] + stride[0] * (out_hw[0] - 1) + 1, stride[0]
            )
            cols = slice(
                j * dilation[1], j * dilation[1] + stride[1] * (out_hw[1] - 1) + 1, stride[1]
            )
            windows[:, :, i, j] = padded[:, :, rows, cols]
    return windows, out_hw


def _np_im2col(x, kernel_size, dilation, padding, stride):
    windows, out_hw = _np_windows(x, kernel_size, dilation, padding, stride)
    n, c = x.shape[:2]
    return windows.reshape(n, c * kernel_size[0] * kernel_size[1], out_hw[0] * out_hw[1])


def _np_col2im(cols, output_size, kernel_size, dilation, padding, stride):
    n = cols.shape[0]
    kh, kw = kernel_size
    c = cols.shape[1] // (kh * kw)
    h, w = output_size
    out_hw = _out_hw(h, w, kernel_size, stride, padding, dilation)
    out = np.zeros((n, c, h + 2 * padding[0], w + 2 * padding[1]), dtype=cols.dtype)
    blocks = cols.reshape(n, c, kh, kw, out_hw[0], out_hw[1])
    for i in range(kh):
        for j in range(kw):
            for a in range(out_hw[0]):
                for b in range(out_hw[1]):
                    out[:, :, a * stride[0] + i * dilation[0], b * stride[1] + j * dilation[1]] += (
                        blocks[:, :, i, j, a, b]
                    )
    return out[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w]


def _np_max_pool2d(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)  # noqa: E731
    kernel, pad, dil = pair(kernel_size), pair(padding), pair(dilation)
    step = pair(stride) if stride not in (None, (), []) else kernel
    batched = x.ndim == 4
    x4 = x if batched else x[None]
    w = x4.shape[-1]
    windows, out_hw = _np_windows(x4, kernel, dil, pad, step, -np.inf, ceil_mode)
    flat = windows.transpose(0, 1, 4, 5, 2, 3).reshape(x4.shape[:2] + out_hw + (-1,))
    local = flat.argmax(-1)
    rows = (np.arange(out_hw[0]) * step[0] - pad[0])[:, None] + (local // kernel[1]) * dil[0]
    cols = (np.arange(out_hw[1]) * step[1] - pad[1])[None, :] + (local % kernel[1]) * dil[1]
    values, index = flat.max(-1), rows * w + cols
    return (values, index) if batched else (values[0], index[0])


def _np_constant_pad(x, pad, value=0):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (max(pad[2 * i], 0), max(pad[2 * i + 1], 0))
    out = np.pad(x, widths, constant_values=value)
    index = [slice(None)] * x.ndim
    for i in range(len(pad) // 2):
        before, after = pad[2 * i], pad[2 * i + 1]
        dim = x.ndim - 1 - i
        index[dim] = slice(-before if before < 0 else None, after if after < 0 else None)
    return out[tuple(index)]


ROWS = [
    OpDef(
        "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05) -> Tensor",
        Kind.NN,
        _np_layer_norm,
        dtypes=DTYPES_FLOAT,
        runner=run.layer_norm,
        decomposition=_layer_norm,
        method=False,
        samples="layer_norm",
        notes="nn.functional.layer_norm; a row of its own so that autograd records one node "
        "with the closed-form backward instead of the decomposition's eight",
    ),
    OpDef(
        "softmax(Tensor input, int dim, ScalarType? dtype=None) -> Tensor",
        Kind.NN,
        _np_softmax,
        dtypes=DTYPES_FLOAT,
        runner=run.along_dim,
        decomposition=_softmax,
        samples="along_dim",
        out=OUT_EXACT,
        kernel_args="(out, x, dim): x contiguous",
    ),
    OpDef(
        "log_softmax(Tensor input, int dim, ScalarType? dtype=None) -> Tensor",
        Kind.NN,
        _np_log_softmax,
        dtypes=DTYPES_FLOAT,
        runner=run.along_dim,
        decomposition=_log_softmax,
        samples="along_dim",
        out=OUT_EXACT,
        kernel_args="(out, x, dim): x contiguous",
    ),
    OpDef(
        "im2col(Tensor input, int[] kernel_size, int[] dilation, int[] padding, int[] stride) "
        "-> Tensor",
        Kind.CONV,
        _np_im2col,
        dtypes=DTYPES_FLOAT,
        runner=run.im2col,
        decomposition=_im2col,
        function=False,
        method=False,
        samples="im2col",
        kernel_args="(out, x, kernel, dilation, padding, stride): x (N,C,H,W) contiguous, "
        "out (N,C*kh*kw,L)",
        notes="nn.functional.unfold",
    ),
    OpDef(
        "col2im(Tensor input, int[] output_size, int[] kernel_size, int[] dilation, "
        "int[] padding, int[] stride) -> Tensor",
        Kind.CONV,
        _np_col2im,
        dtypes=DTYPES_FLOAT,
        runner=run.col2im,
        decomposition=_col2im,
        function=False,
        method=False,
        samples="col2im",
        kernel_args="(out, cols, kernel, dilation, padding, stride): cols contiguous; sums "
        "overlapping blocks",
        notes="nn.functional.fold",
    ),
    OpDef(
        "max_pool2d_with_indices(Tensor input, int[] kernel_size, int[] stride=(), "
        "int[] padding=0, int[] dilation=1, bool ceil_mode=False) -> (Tensor values, "
        "Tensor indices)",
        Kind.NN,
        _np_max_pool2d,
        dtypes=DTYPES_FLOAT,
        runner=run.max_pool2d,
        decomposition=_max_pool2d,
        function=False,
        method=False,
        samples="max_pool2d",
        kernel_args="(values, indices, x, kernel, stride, padding, dilation): x contiguous; "
        "indices flat in each input (H, W) plane",
    ),
    OpDef(
        "constant_pad_nd(Tensor input, int[] pad, Scalar value=0) -> Tensor",
        Kind.NN,
        _np_constant_pad,
        runner=run.constant_pad,
        core=True,
        method=False,
        samples="pad",
        kernel_args="none: the core fills and copies",
    ),
]
