"""Conv1d/2d/3d and ConvTranspose1d/2d/3d."""

from __future__ import annotations

import math

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _ntuple(value, n):
    return (value,) * n if isinstance(value, int) else tuple(value)


def _reversed_padding(padding, kernel_size, dilation) -> list:
    """F.pad's (left, right) pairs, last dim first, for a padding_mode other than zeros."""
    pads = []
    for i in reversed(range(len(kernel_size))):
        if padding == "same":
            total = dilation[i] * (kernel_size[i] - 1)
            pads += [total // 2, total - total // 2]
        else:
            pads += [0, 0] if padding == "valid" else [padding[i], padding[i]]
    return pads


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
        n = self._dims
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        self.padding_mode = padding_mode
        self._check_options()
        self._reversed_padding_repeated_twice = _reversed_padding(
            self.padding, self.kernel_size, self.dilation
        )
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

    def _check_options(self) -> None:
        """PyTorch's constructor checks, with its exception types and messages."""
        if self.groups <= 0:
            raise ValueError("groups must be a positive integer")
        for name in ("in_channels", "out_channels"):
            if getattr(self, name) % self.groups:
                raise ValueError(
                    f"{name} ({getattr(self, name)}) must be divisible by groups ({self.groups})"
                )
        if isinstance(self.padding, str):
            if self.padding not in ("same", "valid"):
                raise ValueError(
                    f"Invalid padding string {self.padding!r}, should be one of {{'same', 'valid'}}"
                )
            if self.padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        modes = ("zeros", "reflect", "replicate", "circular")
        if self.padding_mode not in modes:
            raise ValueError(
                f"padding_mode must be one of {set(modes)}, but got "
                f"padding_mode='{self.padding_mode}'"
            )
        if self._transposed and self.padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')

    def _conv(self, functional, input):
        """``functional`` over ``input``, padded first by ``padding_mode`` unless zeros."""
        padding = self.padding
        if self.padding_mode != "zeros":
            input = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        return functional(
            input, self.weight, self.bias, self.stride, padding, self.dilation, self.groups
        )

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

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
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L)."""

    _dims = 1

    def forward(self, input):
        return self._conv(F.conv1d, input)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W).

    Example:
        >>> ember.nn.Conv2d(1, 32, 3)(ember.randn(8, 1, 28, 28)).shape
        ember.Size([8, 32, 26, 26])
    """

    def forward(self, input):
        return self._conv(F.conv2d, input)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W)."""

    _dims = 3

    def forward(self, input):
        return self._conv(F.conv3d, input)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolution (the gradient of the convolution with respect to its input);
    ``forward(input, output_size)`` picks the output_padding that reaches ``output_size``."""

    _transposed = True
    _fn = None

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

    def _output_padding(self, input, output_size):
        """PyTorch's rule: ``output_size`` (spatial, or with the leading dims) minus the
        smallest size the geometry gives, checked against the range the stride allows."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        lead = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or "
                f"{lead + n} elements (got {len(output_size)})"
            )
        smallest = [
            (input.shape[lead + d] - 1) * self.stride[d]
            - 2 * self.padding[d]
            + self.dilation[d] * (self.kernel_size[d] - 1)
            + 1
            for d in range(n)
        ]
        largest = [size + self.stride[d] - 1 for d, size in enumerate(smallest)]
        for size, low, high in zip(output_size, smallest, largest):
            if not low <= size <= high:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from "
                    f"{smallest} to {largest} (for an input of {list(input.shape[lead:])})"
                )
        return tuple(size - low for size, low in zip(output_size, smallest))

    def forward(self, input, output_size=None):
        return type(self)._fn(
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution over (N, C_in, L)."""

    _dims = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution over (N, C_in, H, W)."""

    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution over (N, C_in, D, H, W)."""

    _dims = 3
    _fn = staticmethod(F.conv_transpose3d)
