"""Conv1d, Conv2d, ConvTranspose2d."""

from __future__ import annotations

import math

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _ntuple(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


class _ConvNd(Module):
    _dims = 2
    _transposed = False

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
        output_padding=0,
    ):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible "
                f"by groups ({groups})"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"padding_mode='{padding_mode}' is not supported yet")
        n = self._dims
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        self.padding_mode = padding_mode
        shape = (
            (in_channels, out_channels // groups)
            if self._transposed
            else (out_channels, in_channels // groups)
        ) + self.kernel_size
        self.weight = Parameter(ember.empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _check(self, input):
        expected = self._dims + 2
        if input.ndim not in (expected - 1, expected):
            raise RuntimeError(
                f"{type(self).__name__}: expected {expected - 1}-D or {expected}-D input, got "
                f"{list(input.shape)}"
            )
        channels = input.shape[-self._dims - 1]
        if channels != self.in_channels:
            raise RuntimeError(
                f"{type(self).__name__}(in_channels={self.in_channels}): input of shape "
                f"{list(input.shape)} has {channels} channels"
            )

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self._dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L)."""

    _dims = 1

    def forward(self, input):
        self._check(input)
        return F.conv1d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W).

    Example:
        >>> ember.nn.Conv2d(1, 32, 3)(ember.randn(8, 1, 28, 28)).shape
        ember.Size([8, 32, 26, 26])
    """

    def forward(self, input):
        self._check(input)
        return F.conv2d(
            input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class ConvTranspose2d(_ConvNd):
    """Transposed 2-D convolution (the gradient of Conv2d with respect to its input)."""

    _transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
            output_padding,
        )

    def forward(self, input, output_size=None):
        self._check(input)
        output_padding = self.output_padding
        if output_size is not None:
            output_padding = tuple(
                output_size[-2 + i]
                - (
                    (input.shape[-2 + i] - 1) * self.stride[i]
                    - 2 * self.padding[i]
                    + self.dilation[i] * (k - 1)
                    + 1
                )
                for i, k in enumerate(self.kernel_size)
            )
        return F.conv_transpose2d(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )
