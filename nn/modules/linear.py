"""Identity, Linear, Bilinear."""

from __future__ import annotations

import math

import ember

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


def _factory(device, dtype):
    return {"device": device, "dtype": dtype}


class Identity(Module):
    """Returns its input unchanged (accepts and ignores any constructor arguments)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b``.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: learn an additive bias (default True).

    Shape:
        Input (*, in_features); output (*, out_features).

    Example:
        >>> ember.nn.Linear(20, 30)(ember.randn(128, 20)).shape
        ember.Size([128, 30])
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(ember.empty(out_features, in_features, **_factory(device, dtype)))
        if bias:
            self.bias = Parameter(ember.empty(out_features, **_factory(device, dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention's ``out_proj`` (reprs show it)."""


class Bilinear(Module):
    """``y = x1^T A x2 + b``."""

    def __init__(
        self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None
    ):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = (
            in1_features,
            in2_features,
            out_features,
        )
        self.weight = Parameter(
            ember.empty(out_features, in1_features, in2_features, **_factory(device, dtype))
        )
        if bias:
            self.bias = Parameter(ember.empty(out_features, **_factory(device, dtype)))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
