"""Activation functions (``nn.functional.relu`` etc.): thin wrappers over table ops."""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS


def relu(input, inplace: bool = False):
    return input.relu_() if inplace else OPS["relu"](input)


def relu6(input, inplace: bool = False):
    out = OPS["relu6"](input)
    return input.copy_(out) if inplace else out


def gelu(input, approximate: str = "none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got '{approximate}'")
    return OPS["gelu"](input, approximate)


def silu(input, inplace: bool = False):
    return input.silu_() if inplace else OPS["silu"](input)


def mish(input, inplace: bool = False):
    out = OPS["mish"](input)
    return input.copy_(out) if inplace else out


def sigmoid(input):
    return OPS["sigmoid"](input)


def tanh(input):
    return OPS["tanh"](input)


def hardswish(input, inplace: bool = False):
    out = OPS["hardswish"](input)
    return input.copy_(out) if inplace else out


def hardsigmoid(input, inplace: bool = False):
    out = OPS["hardsigmoid"](input)
    return input.copy_(out) if inplace else out


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    out = OPS["hardtanh"](input, min_val, max_val)
    return input.copy_(out) if inplace else out


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    out = OPS["leaky_relu"](input, negative_slope)
    return input.copy_(out) if inplace else out


def elu(input, alpha: float = 1.0, inplace: bool = False):
    out = OPS["elu"](input, alpha)
    return input.copy_(out) if inplace else out


def celu(input, alpha: float = 1.0, inplace: bool = False):
    out = OPS["celu"](input, alpha)
    return input.copy_(out) if inplace else out


def selu(input, inplace: bool = False):
    out = OPS["selu"](input)
    return input.copy_(out) if inplace else out


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    return OPS["softplus"](input, beta, threshold)


def softsign(input):
    return OPS["softsign"](input)


def logsigmoid(input):
    return OPS["logsigmoid"](input)


def _softmax_dim(input, dim):
    if dim is not None:
        return dim
    return 0 if input.ndim in (0, 1, 3) else 1  # PyTorch's legacy implicit choice


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    return OPS["softmax"](input, _softmax_dim(input, dim), dtype)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    return OPS["log_softmax"](input, _softmax_dim(input, dim), dtype)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    return OPS["softmax"](-input, _softmax_dim(input, dim), dtype)


def glu(input, dim: int = -1):
    a, b = ember.chunk(input, 2, dim)
    return a * ember.sigmoid(b)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    out = ember.where(input > threshold, input, ember.full_like(input, value))
    return input.copy_(out) if inplace else out
