"""Activation functions (``nn.functional.relu`` etc.): thin wrappers over table ops."""

from __future__ import annotations

import ember
from ember.dispatcher.optable import OPS


def _apply(name: str, input, inplace: bool, *args):
    """``OPS[name]`` out of place, or its in-place row ``name_`` (whose autograd formula works
    from the result, so the input may be overwritten)."""
    return OPS[name + "_" if inplace else name](input, *args)


def relu(input, inplace: bool = False):
    return _apply("relu", input, inplace)


def relu6(input, inplace: bool = False):
    return _apply("relu6", input, inplace)


def gelu(input, approximate: str = "none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got '{approximate}'")
    return OPS["gelu"](input, approximate)


def silu(input, inplace: bool = False):
    return _apply("silu", input, inplace)


def mish(input, inplace: bool = False):
    return _apply("mish", input, inplace)


def sigmoid(input):
    return OPS["sigmoid"](input)


def tanh(input):
    return OPS["tanh"](input)


def hardswish(input, inplace: bool = False):
    return _apply("hardswish", input, inplace)


def hardsigmoid(input, inplace: bool = False):
    return _apply("hardsigmoid", input, inplace)


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    return _apply("hardtanh", input, inplace, min_val, max_val)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    return _apply("leaky_relu", input, inplace, negative_slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    return _apply("elu", input, inplace, alpha)


def celu(input, alpha: float = 1.0, inplace: bool = False):
    return _apply("celu", input, inplace, alpha)


def selu(input, inplace: bool = False):
    return _apply("selu", input, inplace)


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
    """``input`` where it exceeds ``threshold``, else ``value`` (no gradient there)."""
    below = input <= threshold
    return input.masked_fill_(below, value) if inplace else input.masked_fill(below, value)
