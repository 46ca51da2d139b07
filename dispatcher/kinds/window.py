"""Sliding-window geometry of the conv and pooling family (conv*, conv_transpose*, max/avg
pooling, unfold/fold): argument checks with PyTorch's messages, and output sizes.

The runners of the window ops (kinds/nn.py) and nn.functional both check here, so every device
refuses the same arguments before a kernel sees them: a CPU kernel reported dilation 0 as
"status 4" and the xpu one computed with it. Checks take per-dim tuples, 1-D ops their
1-tuples, so messages name the dims the caller has.
"""

from __future__ import annotations

_LETTERS = ("T", "H", "W")


def pooled_size(size, kernel, stride, padding, dilation, ceil_mode=False) -> int:
    span = dilation * (kernel - 1) + 1
    numerator = size + 2 * padding - span
    out = (-(-numerator // stride) if ceil_mode else numerator // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1  # the last window must start inside the input or left padding (PyTorch)
    return out


def expand(value, n: int, name: str, op: str) -> tuple:
    """An int, one int in a sequence, or n ints, as an n-tuple of ints (PyTorch expands a
    one-element list too: ``avg_pool2d(x, 2, padding=[1])``)."""
    values = (value,) * n if isinstance(value, int) else tuple(value)
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise RuntimeError(
            f"{op}: expected {name} to be a single integer value or a list of {n} values to "
            f"match the convolution dimensions, but got {name}={list(values)}"
        )
    return values


def conv_padding(op: str, padding, kernel, dilation, stride):
    """``(padding, extra)``: symmetric padding per dim and the extra right/bottom padding that
    padding='same' needs when ``dilation * (kernel - 1)`` is odd (PyTorch pads the input)."""
    if padding == "valid":
        return (0,) * len(kernel), None
    if not isinstance(padding, str):
        return expand(padding, len(kernel), "padding", op), None
    if padding != "same":
        raise RuntimeError(f"{op}: Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    extra = [t % 2 for t in totals]
    return tuple(t // 2 for t in totals), (extra if any(extra) else None)


def _per_dim(prefix: str, values: tuple, suffix: str = "", sep: str = " ") -> str:
    """``kH: 0 kW: 2`` (prefix "k"), ``dilation_height: 0 dilation_width: 0`` (suffix)."""
    if suffix:
        names = ("depth", "height", "width")[-len(values) :]
        return sep.join(f"{prefix}_{n}: {v}" for n, v in zip(names, values))
    return sep.join(f"{prefix}{letter}: {v}" for letter, v in zip(_LETTERS[-len(values) :], values))


def check_conv(op: str, stride, padding, dilation, groups: int, output_padding=None) -> None:
    """conv* and conv_transpose* hyper-parameters (``padding`` as a tuple of ints)."""
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported, got {list(stride)}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported, got {list(padding)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups}")
    if output_padding is None:
        return
    if any(p < 0 for p in output_padding):
        raise RuntimeError(
            f"{op}: negative output_padding is not supported, got {list(output_padding)}"
        )
    if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(
            f"{op}: output padding must be smaller than either stride or dilation, but got "
            f"{_per_dim('output_padding', output_padding, 'x')} {_per_dim('stride', stride, 'x')} "
            f"{_per_dim('dilation', dilation, 'x')}"
        )


def check_conv_shapes(op: str, x, weight, bias, groups: int, transposed: bool) -> None:
    """Weight against groups and the input's channels, bias against the weight."""
    shape = list(weight.shape)
    if shape[0] == 0 or shape[0] % groups:
        raise RuntimeError(
            f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
            f"dimension 0 (and at least 1), but got weight of size {shape} instead"
        )
    channels = shape[0] if transposed else shape[1] * groups
    if x.shape[1] != channels:
        raise RuntimeError(
            f"{op}: Given {'transposed=1' if transposed else f'groups={groups}'}, weight of "
            f"size {shape}, expected input{list(x.shape)} to have {channels} channels, but got "
            f"{x.shape[1]} channels instead"
        )
    out_channels = shape[1] * groups if transposed else shape[0]
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(
            f"{op}: Given {'transposed=1, ' if transposed else ''}weight of size {shape}, "
            f"expected bias to be 1-dimensional with {out_channels} elements, but got bias of "
            f"size {list(bias.shape)} instead"
        )


def check_pool(op: str, kernel, stride, padding, dilation=None) -> None:
    """max/avg pooling hyper-parameters; padding at most half the kernel, as in PyTorch."""
    dilation = dilation or (1,) * len(kernel)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(
            f"{op}: kernel size should be greater than zero, but got {_per_dim('k', kernel)}"
        )
    if any(s <= 0 for s in stride):
        rule = "should not be zero" if 0 in stride else "should be greater than zero"
        raise RuntimeError(f"{op}: stride {rule}, but got {_per_dim('d', stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            f"{op}: dilation should be greater than zero, but got {_per_dim('dilation', dilation)}"
        )
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0:
            raise RuntimeError(f"{op}: pad must be non-negative, but got pad: {p}")
        if 2 * p > d * (k - 1) + 1:
            raise RuntimeError(
                f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise RuntimeError(
            f"{op}: pad should be smaller than or equal to half of kernel size, but got "
            f"{_per_dim('pad', padding, sep=', ')}, {_per_dim('k', kernel, sep=', ')}"
        )


def check_unfold(op: str, kernel, dilation, padding, stride) -> None:
    """im2col/col2im (unfold/fold) hyper-parameters."""
    for name, values, low in (
        ("kernel", kernel, 1),
        ("dilation", dilation, 1),
        ("pad", padding, 0),
        ("stride", stride, 1),
    ):
        if any(v < low for v in values):
            want = "be greater than zero" if low else "be non-negative"
            what = {"kernel": "kernel size", "pad": "padding"}.get(name, name)
            raise RuntimeError(f"{op}: {what} should {want}, but got {_per_dim(name, values, 'x')}")


def check_output_size(op: str, shape, out_sizes) -> None:
    """PyTorch's refusal of a window op whose output would have no positions."""
    if all(s > 0 for s in out_sizes):
        return
    spatial = len(out_sizes)
    given = "x".join(str(s) for s in shape[-spatial - 1 :])
    calculated = "x".join(str(s) for s in (shape[-spatial - 1], *out_sizes))
    raise RuntimeError(
        f"{op}: Given input size: ({given}). Calculated output size: ({calculated}). Output "
        "size is too small"
    )
