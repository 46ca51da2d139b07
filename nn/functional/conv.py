"""Convolutions as im2col + one matmul (all groups at once), transposed convolution as matmul +
col2im, and unfold/fold, over the op table's im2col/col2im rows."""

from __future__ import annotations

from ember.dispatcher.optable import OPS


def _tuple(value, n: int, name: str) -> tuple:
    value = (value,) * n if isinstance(value, int) else tuple(value)
    if len(value) != n:
        raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {value}")
    return value


def _batch(name: str, input, dims: int):
    """``input`` with a batch dim, and whether it had one: (C, *spatial) becomes (1, C, ...)."""
    if input.ndim == dims + 2:
        return input, True
    if input.ndim == dims + 1:
        return input.unsqueeze(0), False
    raise RuntimeError(
        f"{name}: Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input, but got input "
        f"of size: {list(input.shape)}"
    )


def _padding(padding, kernel, dilation):
    """``(padding, extra)``: symmetric padding per dim and the extra right/bottom padding that
    padding='same' needs when ``dilation * (kernel - 1)`` is odd (PyTorch pads the input)."""
    if padding == "valid":
        return (0,) * len(kernel), None
    if padding != "same":
        return _tuple(padding, len(kernel), "padding"), None
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    extra = [t % 2 for t in totals]
    return tuple(t // 2 for t in totals), (extra if any(extra) else None)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of (N, C_in, H, W) (or unbatched (C_in, H, W)) by weight
    (C_out, C_in/groups, kH, kW); ``padding`` also 'same' or 'valid'."""
    return OPS["conv2d"](input, weight, bias, stride, padding, dilation, groups)


def _conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    x, batched = _batch("conv2d", input, 2)
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: weight must be 4-D, got {list(weight.shape)}")
    out_c, c_per_group, kh, kw = weight.shape
    if x.shape[1] != c_per_group * groups:
        raise RuntimeError(
            f"conv2d: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {c_per_group * groups} channels, but got {x.shape[1]} "
            "channels instead"
        )
    stride, dilation = _tuple(stride, 2, "stride"), _tuple(dilation, 2, "dilation")
    padding, extra = _padding(padding, (kh, kw), dilation)
    if extra:
        x = OPS["constant_pad_nd"](x, (0, extra[1], 0, extra[0]), 0)
    n, _, h, w = x.shape
    spans = [d * (k - 1) + 1 for k, d in zip((kh, kw), dilation)]
    if h + 2 * padding[0] < spans[0] or w + 2 * padding[1] < spans[1]:
        raise RuntimeError(
            f"conv2d: Calculated padded input size per channel: ({h + 2 * padding[0]} x "
            f"{w + 2 * padding[1]}). Kernel size: ({spans[0]} x {spans[1]}). Kernel size can't be "
            f"greater than actual input size (input of shape {list(input.shape)})"
        )
    cols = OPS["im2col"](x, (kh, kw), dilation, padding, stride)  # (N, C*kh*kw, L)
    k = c_per_group * kh * kw
    if groups == 1:
        out = OPS["matmul"](weight.reshape(out_c, k), cols)
    else:  # (G, out/G, K) @ (N, G, K, L): every group in one batched product
        per = out_c // groups
        out = OPS["matmul"](weight.reshape(groups, per, k), cols.view(n, groups, k, cols.shape[-1]))
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    out = out.reshape(n, out_c, oh, -1)
    if bias is not None:
        out = out + bias.view(1, out_c, 1, 1)
    return out if batched else out.squeeze(0)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution of (N, C_in, L) (or unbatched (C_in, L)) by weight (C_out, C_in/groups, k);
    ``padding`` also 'same' or 'valid'."""
    return OPS["conv1d"](input, weight, bias, stride, padding, dilation, groups)


def _conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 2-D convolution over a height of 1."""
    x, batched = _batch("conv1d", input, 1)
    if weight.ndim != 3:
        raise RuntimeError(f"conv1d: weight must be 3-D, got {list(weight.shape)}")
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"conv1d: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {x.shape[1]} "
            "channels instead"
        )
    if not isinstance(padding, str):
        padding = (0, _tuple(padding, 1, "padding")[0])
    out = _conv2d(
        x.unsqueeze(-2),
        weight.unsqueeze(-2),
        bias,
        (1, _tuple(stride, 1, "stride")[0]),
        padding,
        (1, _tuple(dilation, 1, "dilation")[0]),
        groups,
    ).squeeze(-2)
    return out if batched else out.squeeze(0)


def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """Transposed 2-D convolution (the gradient of conv2d with respect to its input); weight
    (C_in, C_out/groups, kH, kW)."""
    return OPS["conv_transpose2d"](
        input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def _conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    x, batched = _batch("conv_transpose2d", input, 2)
    n, c_in, h, w = x.shape
    if weight.ndim != 4 or weight.shape[0] != c_in:
        raise RuntimeError(
            f"conv_transpose2d: Given transposed=1, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[0]} channels, but got {c_in} channels "
            "instead"
        )
    _, c_out_g, kh, kw = weight.shape
    stride, padding = _tuple(stride, 2, "stride"), _tuple(padding, 2, "padding")
    dilation = _tuple(dilation, 2, "dilation")
    output_padding = _tuple(output_padding, 2, "output_padding")
    out_h = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    out_w = (w - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    per_in = c_in // groups
    k = c_out_g * kh * kw
    # (G, K, C_in/G) @ (N, G, C_in/G, H*W) -> columns (N, G*K, H*W), then overlapping sums.
    wg = weight.reshape(groups, per_in, k).transpose(1, 2)
    cols = OPS["matmul"](wg, x.reshape(n, groups, per_in, h * w)).reshape(n, groups * k, h * w)
    out = OPS["col2im"](cols, (out_h, out_w), (kh, kw), dilation, padding, stride)
    if bias is not None:
        out = out + bias.view(1, -1, 1, 1)
    return out if batched else out.squeeze(0)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks: (N, C, H, W) -> (N, C*kH*kW, L) (unbatched (C, H, W) -> (C*kH*kW, L))."""
    x, batched = _batch("unfold", input, 2)
    out = OPS["im2col"](
        x,
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )
    return out if batched else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Inverse of unfold, summing overlaps: (N, C*kH*kW, L) -> (N, C, H, W)."""
    x, batched = _batch("fold", input, 1)
    out = OPS["col2im"](
        x,
        _tuple(output_size, 2, "output_size"),
        _tuple(kernel_size, 2, "kernel_size"),
        _tuple(dilation, 2, "dilation"),
        _tuple(padding, 2, "padding"),
        _tuple(stride, 2, "stride"),
    )
    return out if batched else out.squeeze(0)
