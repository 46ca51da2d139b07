"""Convolutions (im2col + batched matmul) and pooling, over the im2col/col2im/max-pool ops."""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS


def _tuple(value, n: int, name: str) -> tuple:
    value = (value,) * n if isinstance(value, int) else tuple(value)
    if len(value) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


def _same_padding(kernel, dilation, name):
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        if total % 2:
            raise NotImplementedError(
                f"{name}: padding='same' needs symmetric padding (odd kernel)"
            )
        pads.append(total // 2)
    return tuple(pads)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C_in, H, W) by weight (C_out, C_in/groups, kH, kW)."""
    batched = input.ndim == 4
    if not batched:
        if input.ndim != 3:
            raise RuntimeError(
                f"conv2d: expected 3-D (unbatched) or 4-D (batched) input, got {list(input.shape)}"
            )
        input = input.unsqueeze(0)
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: weight must be 4-D, got {list(weight.shape)}")
    n, c, h, w = input.shape
    out_c, c_per_group, kh, kw = weight.shape
    if c != c_per_group * groups:
        raise RuntimeError(
            f"conv2d: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {c_per_group * groups} channels, but got {c} channels "
            "instead"
        )
    stride, dilation = _tuple(stride, 2, "stride"), _tuple(dilation, 2, "dilation")
    if padding == "valid":
        padding = (0, 0)
    elif padding == "same":
        padding = _same_padding((kh, kw), dilation, "conv2d")
    padding = _tuple(padding, 2, "padding")
    cols = OPS["im2col"](input, (kh, kw), dilation, padding, stride)
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    k = c_per_group * kh * kw
    if groups == 1:
        out = OPS["bmm"](weight.reshape(out_c, k).expand(n, out_c, k), cols)
    else:
        per = out_c // groups
        parts = [
            OPS["bmm"](
                weight[g * per : (g + 1) * per].reshape(per, k).expand(n, per, k),
                cols[:, g * k : (g + 1) * k],
            )
            for g in range(groups)
        ]
        out = ember.cat(parts, 1)
    out = out.view(n, out_c, oh, ow)
    if bias is not None:
        out = out + bias.view(1, out_c, 1, 1)
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C_in, L) by weight (C_out, C_in/groups, k)."""
    batched = input.ndim == 3
    x = input.unsqueeze(-2) if batched else input.unsqueeze(0).unsqueeze(-2)
    if padding not in ("same", "valid"):
        padding = (0, _tuple(padding, 1, "padding")[0])
    elif padding == "same":
        padding = (0,) + _same_padding(weight.shape[-1:], _tuple(dilation, 1, "dilation"), "conv1d")
    out = conv2d(
        x,
        weight.unsqueeze(-2),
        bias,
        (1, _tuple(stride, 1, "stride")[0]),
        padding,
        (1, _tuple(dilation, 1, "dilation")[0]),
        groups,
    )
    out = out.squeeze(-2)
    return out if batched else out.squeeze(0)


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 2-D convolution; weight (C_in, C_out/groups, kH, kW)."""
    batched = input.ndim == 4
    if not batched:
        input = input.unsqueeze(0)
    n, c_in, h, w = input.shape
    _, c_out_g, kh, kw = weight.shape
    stride, padding = _tuple(stride, 2, "stride"), _tuple(padding, 2, "padding")
    dilation, output_padding = (
        _tuple(dilation, 2, "dilation"),
        _tuple(output_padding, 2, "output_padding"),
    )
    out_h = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    out_w = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    per_in = c_in // groups
    parts = []
    for g in range(groups):
        wg = weight[g * per_in : (g + 1) * per_in].reshape(per_in, c_out_g * kh * kw).t()
        xg = input[:, g * per_in : (g + 1) * per_in].reshape(n, per_in, h * w)
        cols = OPS["bmm"](wg.expand(n, *wg.shape), xg)
        parts.append(OPS["col2im"](cols, (out_h, out_w), (kh, kw), dilation, padding, stride))
    out = parts[0] if groups == 1 else ember.cat(parts, 1)
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1)
    return out if batched else out.squeeze(0)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks: (N, C, H, W) -> (N, C*kH*kW, L)."""
    return OPS["im2col"](
        input,
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Inverse of unfold, summing overlaps: (N, C*kH*kW, L) -> (N, C, H, W)."""
    batched = input.ndim == 3
    x = input if batched else input.unsqueeze(0)
    out = OPS["col2im"](
        x,
        _tuple(output_size, 2, "output_size"),
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )
    return out if batched else out.squeeze(0)


def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    values, indices = OPS["max_pool2d_with_indices"](
        input,
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(stride, 2, "stride") if stride not in (None, ()) else (),
        _tuple(padding, 2, "padding"),
        _tuple(dilation, 2, "dilation"),
        ceil_mode,
    )
    return (values, indices) if return_indices else values


def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    k = _tuple(kernel_size, 1, "kernel_size")[0]
    s = _tuple(stride, 1, "stride")[0] if stride not in (None, ()) else k
    values, indices = OPS["max_pool2d_with_indices"](
        input.unsqueeze(-2),
        (1, k),
        (1, s),
        (0, _tuple(padding, 1, "padding")[0]),
        (1, _tuple(dilation, 1, "dilation")[0]),
        ceil_mode,
    )
    values, indices = values.squeeze(-2), indices.squeeze(-2)
    return (values, indices) if return_indices else values


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """Average over windows; PyTorch's rules for padding and ceil_mode in the divisor."""
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    n, c, h, w = x.shape
    k = _tuple(kernel_size, 2, "kernel_size")
    s = _tuple(stride, 2, "stride") if stride not in (None, ()) else k
    p = _tuple(padding, 2, "padding")
    from ember.dispatcher.kinds.nn import pooled_size

    oh, ow = (pooled_size(size, k[i], s[i], p[i], 1, ceil_mode) for i, size in enumerate((h, w)))
    extra_h = max(0, (oh - 1) * s[0] + k[0] - h - 2 * p[0])
    extra_w = max(0, (ow - 1) * s[1] + k[1] - w - 2 * p[1])
    padded = OPS["constant_pad_nd"](
        x.reshape(n * c, 1, h, w), (p[1], p[1] + extra_w, p[0], p[0] + extra_h), 0
    )
    sums = OPS["im2col"](padded, k, (1, 1), (0, 0), s).sum(1).view(n, c, oh, ow)
    if divisor_override:
        return _unbatch(sums / divisor_override, batched)
    # Divisor per window: the window clipped to the padded input (count_include_pad) or to the
    # input itself; ceil_mode's extra cells never count.
    ones = ember.ones(1, 1, h, w, dtype=x.dtype, device=x.device)
    if count_include_pad:
        area = OPS["constant_pad_nd"](ones, (p[1], p[1], p[0], p[0]), 1)
        area = OPS["constant_pad_nd"](area, (0, extra_w, 0, extra_h), 0)
    else:
        area = OPS["constant_pad_nd"](ones, (p[1], p[1] + extra_w, p[0], p[0] + extra_h), 0)
    counts = OPS["im2col"](area, k, (1, 1), (0, 0), s).sum(1).view(1, 1, oh, ow)
    return _unbatch(sums / counts, batched)


def _unbatch(out, batched):
    return out if batched else out.squeeze(0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    k = _tuple(kernel_size, 1, "kernel_size")[0]
    s = _tuple(stride, 1, "stride")[0] if stride not in (None, ()) else k
    out = avg_pool2d(
        input.unsqueeze(-2),
        (1, k),
        (1, s),
        (0, _tuple(padding, 1, "padding")[0]),
        ceil_mode,
        count_include_pad,
    )
    return out.squeeze(-2)


def _adaptive_edges(size: int, out: int):
    starts = [(i * size) // out for i in range(out)]
    ends = [-(-((i + 1) * size) // out) for i in range(out)]
    return starts, ends


def adaptive_avg_pool2d(input, output_size):
    """Averages over PyTorch's adaptive windows, via an integral image (any sizes)."""
    batched = input.ndim == 4
    x = input if batched else input.unsqueeze(0)
    h, w = x.shape[-2:]
    out_h, out_w = (output_size, output_size) if isinstance(output_size, int) else output_size
    out_h, out_w = out_h or h, out_w or w
    if h % out_h == 0 and w % out_w == 0:
        return _unbatch(avg_pool2d(x, (h // out_h, w // out_w)), batched)
    integral = OPS["constant_pad_nd"](x.cumsum(-2).cumsum(-1), (1, 0, 1, 0), 0)
    rs, re_ = _adaptive_edges(h, out_h)
    cs, ce = _adaptive_edges(w, out_w)
    dev = x.device
    r0, r1 = ember.tensor(rs, device=dev), ember.tensor(re_, device=dev)
    c0, c1 = ember.tensor(cs, device=dev), ember.tensor(ce, device=dev)

    def corner(rows, cols):
        return integral.index_select(-2, rows).index_select(-1, cols)

    total = corner(r1, c1) - corner(r0, c1) - corner(r1, c0) + corner(r0, c0)
    area = ((r1 - r0).view(-1, 1) * (c1 - c0).view(1, -1)).to(x.dtype)
    return _unbatch(total / area, batched)


def adaptive_avg_pool1d(input, output_size):
    size = output_size if isinstance(output_size, int) else output_size[0]
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, size)).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    h, w = input.shape[-2:]
    out_h, out_w = (output_size, output_size) if isinstance(output_size, int) else output_size
    if h % out_h or w % out_w:
        raise NotImplementedError("adaptive_max_pool2d: only sizes that divide the input for now")
    return max_pool2d(input, (h // out_h, w // out_w), return_indices=return_indices)
