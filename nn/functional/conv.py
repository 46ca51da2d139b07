"""Convolutions as im2col + one matmul (all groups at once), transposed convolutions as matmul +
col2im, and unfold/fold, over the op table's im2col/col2im rows. 1-D ones run as 2-D over a
height of 1; 3-D ones as one 2-D convolution per kernel depth, summed.

Every public function checks its arguments with dispatcher/kinds/window.py (PyTorch's messages)
before any kernel runs; the private ``_convNd`` functions take checked, batched arguments.
"""

from __future__ import annotations

import ember
from ember.dispatcher.kinds.window import check_conv, check_conv_shapes, conv_padding, expand
from ember.dispatcher.optable import OPS


def _tuple(value, n: int, name: str, op: str = "conv") -> tuple:
    return expand(value, n, name, op)


def _batch(name: str, input, dims: int):
    """``input`` with a batch dim, and whether it had one: (C, *spatial) becomes (1, C, ...)."""
    if input.ndim == dims + 2:
        return input, True
    if input.ndim == dims + 1:
        return input.unsqueeze(0), False
    raise RuntimeError(
        f"{name}: Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but "
        f"got input of size: {list(input.shape)}"
    )


def _joined(sizes) -> str:
    return " x ".join(str(s) for s in sizes)


def _convolution(op, spatial, input, weight, bias, stride, padding, dilation, groups):
    """Checks, then ``_CONV[spatial]`` on a batched input, then the bias."""
    x, batched = _batch(op, input, spatial)
    if weight.ndim != spatial + 2:
        raise RuntimeError(
            f"{op}: expected weight to be {spatial + 2}-D (out_channels, in_channels/groups, "
            f"*kernel), but got weight of size {list(weight.shape)}"
        )
    kernel = tuple(weight.shape[2:])
    stride = expand(stride, spatial, "stride", op)
    dilation = expand(dilation, spatial, "dilation", op)
    padding, extra = conv_padding(op, padding, kernel, dilation, stride)
    check_conv(op, stride, padding, dilation, groups)
    check_conv_shapes(op, x, weight, bias, groups, transposed=False)
    if extra:
        pads = [v for e in reversed(extra) for v in (0, e)]
        x = OPS["constant_pad_nd"](x, tuple(pads), 0)
    padded = [s + 2 * p for s, p in zip(x.shape[2:], padding)]
    spans = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(s < k for s, k in zip(padded, spans)):
        raise RuntimeError(
            f"{op}: Calculated padded input size per channel: ({_joined(padded)}). Kernel size: "
            f"({_joined(spans)}). Kernel size can't be greater than actual input size (input of "
            f"shape {list(input.shape)})"
        )
    out = _CONV[spatial](x, weight, stride, padding, dilation, groups)
    if bias is not None:
        out = out + bias.view(1, -1, *(1,) * spatial)
    return out if batched else out.squeeze(0)


def _cols_conv2d(x, weight, stride, padding, dilation, groups):
    n, _, h, w = x.shape
    out_c, c_per_group, kh, kw = weight.shape
    cols = OPS["im2col"](x, (kh, kw), dilation, padding, stride)  # (N, C*kh*kw, L)
    k = c_per_group * kh * kw
    if groups == 1:
        out = OPS["matmul"](weight.reshape(out_c, k), cols)
    else:  # (G, out/G, K) @ (N, G, K, L): every group in one batched product
        per = out_c // groups
        out = OPS["matmul"](weight.reshape(groups, per, k), cols.view(n, groups, k, cols.shape[-1]))
    spans = [d * (k - 1) + 1 for k, d in zip((kh, kw), dilation)]
    oh, ow = ((size + 2 * padding[i] - spans[i]) // stride[i] + 1 for i, size in enumerate((h, w)))
    return out.reshape(n, out_c, oh, ow)  # sizes, not -1: an empty batch has no size to infer


def _cols_conv1d(x, weight, stride, padding, dilation, groups):
    return _cols_conv2d(
        x.unsqueeze(-2),
        weight.unsqueeze(-2),
        (1, *stride),
        (0, *padding),
        (1, *dilation),
        groups,
    ).squeeze(-2)


def _cols_conv3d(x, weight, stride, padding, dilation, groups):
    """One 2-D convolution per kernel depth i, over the depth planes it meets (every output
    depth's plane at ``o * stride + i * dilation`` folded into the batch), summed."""
    n, c, depth = x.shape[:3]
    if padding[0]:
        x = OPS["constant_pad_nd"](x, (0, 0, 0, 0, padding[0], padding[0]), 0)
        depth += 2 * padding[0]
    out_d = (depth - dilation[0] * (weight.shape[2] - 1) - 1) // stride[0] + 1
    out = None
    for i in range(weight.shape[2]):
        planes = x.narrow(2, i * dilation[0], (out_d - 1) * stride[0] + 1)[:, :, :: stride[0]]
        planes = planes.transpose(1, 2).reshape(n * out_d, c, *x.shape[3:])
        part = _cols_conv2d(planes, weight[:, :, i], stride[1:], padding[1:], dilation[1:], groups)
        out = part if out is None else out + part
    return out.reshape(n, out_d, *out.shape[1:]).transpose(1, 2)


_CONV = {1: _cols_conv1d, 2: _cols_conv2d, 3: _cols_conv3d}


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C_in, L) (or unbatched (C_in, L)) by weight (C_out, C_in/groups, k),
    as a 2-D convolution over a height of 1; ``padding`` also 'same' or 'valid'. The op table's
    ``conv1d`` row (one node in a captured graph, one autocast cast)."""
    return OPS["conv1d"](input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C_in, H, W) (or unbatched (C_in, H, W)) by weight
    (C_out, C_in/groups, kH, kW); ``padding`` also 'same' or 'valid'. The op table's ``conv2d``
    row."""
    return OPS["conv2d"](input, weight, bias, stride, padding, dilation, groups)


def _conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The ``conv1d`` row's decomposition."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def _conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The ``conv2d`` row's decomposition: im2col and one matmul (all groups at once)."""
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C_in, D, H, W) (or unbatched (C_in, D, H, W)) by weight
    (C_out, C_in/groups, kD, kH, kW)."""
    return _convolution("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _transposed(
    op, spatial, input, weight, bias, stride, padding, output_padding, groups, dilation
):
    """Checks, then ``_CONV_T[spatial]`` on a batched input, then the bias."""
    x, batched = _batch(op, input, spatial)
    if weight.ndim != spatial + 2:
        raise RuntimeError(
            f"{op}: expected weight to be {spatial + 2}-D (in_channels, out_channels/groups, "
            f"*kernel), but got weight of size {list(weight.shape)}"
        )
    stride, padding, output_padding, dilation = (
        expand(value, spatial, name, op)
        for value, name in (
            (stride, "stride"),
            (padding, "padding"),
            (output_padding, "output_padding"),
            (dilation, "dilation"),
        )
    )
    check_conv(op, stride, padding, dilation, groups, output_padding)
    check_conv_shapes(op, x, weight, bias, groups, transposed=True)
    sizes = [
        (size - 1) * s - 2 * p + d * (k - 1) + o + 1
        for size, k, s, p, d, o in zip(
            x.shape[2:], weight.shape[2:], stride, padding, dilation, output_padding
        )
    ]
    if any(s <= 0 for s in sizes):
        raise RuntimeError(
            f"{op}: Given input size per channel: ({_joined(x.shape[2:])}). Calculated output "
            f"size per channel: ({_joined(sizes)}). Output size is too small"
        )
    out = _CONV_T[spatial](x, weight, stride, padding, output_padding, groups, dilation)
    if bias is not None:
        out = out + bias.view(1, -1, *(1,) * spatial)
    return out if batched else out.squeeze(0)


def _crop(out, padding, sizes):
    """``out``, an uncropped transposed convolution, without ``padding`` on each side of its
    spatial dims 2, 3...: cut or zero-filled to ``sizes`` (output_padding may reach past the
    end). Spatial dims beyond ``len(sizes)`` are kept."""
    pads = [0, 0] * (out.ndim - 2 - len(sizes))
    for dim in reversed(range(len(sizes))):
        pads += [-padding[dim], sizes[dim] + padding[dim] - out.shape[2 + dim]]
    return OPS["constant_pad_nd"](out, tuple(pads), 0)


def _cols_conv_transpose2d(x, weight, stride, padding, output_padding, groups, dilation):
    n, c_in, h, w = x.shape
    _, c_out_g, kh, kw = weight.shape
    per_in = c_in // groups
    k = c_out_g * kh * kw
    # (G, K, C_in/G) @ (N, G, C_in/G, H*W) -> columns (N, G*K, H*W), then overlapping sums.
    wg = weight.reshape(groups, per_in, k).transpose(1, 2)
    cols = OPS["matmul"](wg, x.reshape(n, groups, per_in, h * w)).reshape(n, groups * k, h * w)
    # Uncropped sizes: every block of every input position lands inside them.
    full = [
        (size - 1) * s + d * (kk - 1) + 1 for size, kk, s, d in _zip4(x, weight, stride, dilation)
    ]
    sizes = [f - 2 * p + o for f, p, o in zip(full, padding, output_padding)]
    if all(o < s for o, s in zip(output_padding, stride)):  # col2im counts exactly h x w blocks
        return OPS["col2im"](cols, tuple(sizes), (kh, kw), dilation, padding, stride)
    # output_padding >= stride (allowed below the dilation): fold it all, then crop and fill
    out = OPS["col2im"](cols, tuple(full), (kh, kw), dilation, (0, 0), stride)
    return _crop(out, padding, sizes)


def _zip4(x, weight, stride, dilation):
    return zip(x.shape[2:], weight.shape[2:], stride, dilation)


def _cols_conv_transpose1d(x, weight, stride, padding, output_padding, groups, dilation):
    return _cols_conv_transpose2d(
        x.unsqueeze(-2),
        weight.unsqueeze(-2),
        (1, *stride),
        (0, *padding),
        (0, *output_padding),
        groups,
        (1, *dilation),
    ).squeeze(-2)


def _cols_conv_transpose3d(x, weight, stride, padding, output_padding, groups, dilation):
    """One transposed 2-D convolution per kernel depth i over every input plane (folded into
    the batch), added at depths ``d * stride + i * dilation``; then the depth padding cropped."""
    n, c_in, depth = x.shape[:3]
    kd = weight.shape[2]
    planes = x.transpose(1, 2).reshape(n * depth, c_in, *x.shape[3:])
    full = (depth - 1) * stride[0] + dilation[0] * (kd - 1) + 1
    out = None
    for i in range(kd):
        part = _cols_conv_transpose2d(
            planes,
            weight[:, :, i],
            stride[1:],
            padding[1:],
            output_padding[1:],
            groups,
            dilation[1:],
        )
        part = part.reshape(n, depth, *part.shape[1:])
        if out is None:
            out = ember.zeros(n, full, *part.shape[2:], dtype=part.dtype, device=part.device)
        at = ember.arange(depth, device=x.device) * stride[0] + i * dilation[0]
        out = out.index_add(1, at, part)
    return _crop(out.transpose(1, 2), padding[:1], (full - 2 * padding[0] + output_padding[0],))


_CONV_T = {1: _cols_conv_transpose1d, 2: _cols_conv_transpose2d, 3: _cols_conv_transpose3d}


def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 1-D convolution (the gradient of conv1d with respect to its input); weight
    (C_in, C_out/groups, k)."""
    return _transposed(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 2-D convolution (the gradient of conv2d with respect to its input); weight
    (C_in, C_out/groups, kH, kW). The op table's ``conv_transpose2d`` row."""
    return OPS["conv_transpose2d"](
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def _conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """The ``conv_transpose2d`` row's decomposition."""
    return _transposed(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def conv_transpose3d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 3-D convolution (the gradient of conv3d with respect to its input); weight
    (C_in, C_out/groups, kD, kH, kW)."""
    return _transposed(
        "conv_transpose3d",
        3,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def _no_integers(name: str, x) -> None:
    """PyTorch's unfold and fold take floating, complex and bool tensors only; the im2col/col2im
    rows also take integers, for the convolutions' exact integer path."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype is ember.bool):
        raise NotImplementedError(
            f'"{name}" not implemented for {x.dtype.name} (supported: floating types and bool)'
        )


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks: (N, C, H, W) -> (N, C*kH*kW, L) (unbatched (C, H, W) -> (C*kH*kW, L))."""
    x, batched = _batch("unfold", input, 2)
    _no_integers("unfold", x)
    out = OPS["im2col"](
        x,
        _tuple(kernel_size, 2, "kernel_size", "unfold"),
        _tuple(dilation, 2, "dilation", "unfold"),
        _tuple(padding, 2, "padding", "unfold"),
        _tuple(stride, 2, "stride", "unfold"),
    )
    return out if batched else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Inverse of unfold, summing overlaps: (N, C*kH*kW, L) -> (N, C, H, W)."""
    x, batched = _batch("fold", input, 1)
    _no_integers("fold", x)
    out = OPS["col2im"](
        x,
        _tuple(output_size, 2, "output_size", "fold"),
        _tuple(kernel_size, 2, "kernel_size", "fold"),
        _tuple(dilation, 2, "dilation", "fold"),
        _tuple(padding, 2, "padding", "fold"),
        _tuple(stride, 2, "stride", "fold"),
    )
    return out if batched else out.squeeze(0)


def conv_tbc(input, weight, bias, pad: int = 0):
    """1-D convolution of time-major input (T, B, C_in) by weight (K, C_in, C_out), output
    (T + 2 pad - K + 1, B, C_out): conv1d over (B, C_in, T)."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError(
            "Weight tensor must have 3 dims: kernel_width, in_channels, out_channels."
        )
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)
