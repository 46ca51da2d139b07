"""Activation modules: each a thin shell over a functional form, built from one table."""

from __future__ import annotations

import warnings

import ember

from .. import functional as F
from .. import init as nn_init
from ..parameter import Parameter
from ._signature import signature
from .module import Module

REQUIRED = object()  # a constructor argument without a default


def _activation(name: str, fn, params: dict, doc: str, shown: str | None = None):
    """A Module class whose constructor takes ``params`` (PyTorch's names, order and defaults;
    ``REQUIRED`` for none) and whose forward calls ``fn(input, **params)``. ``shown`` formats
    the repr's arguments when PyTorch's differs from ``name=value, ...``."""
    required = [k for k, v in params.items() if v is REQUIRED]
    init = signature(required, [(k, v) for k, v in params.items() if v is not REQUIRED])
    names = tuple(params)

    def __init__(self, *args, **kwargs):  # noqa: N807 - becomes the class's __init__
        Module.__init__(self)
        bound = init.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for key in names:
            object.__setattr__(self, key, bound.arguments[key])

    __init__.__signature__ = init

    def forward(self, input):
        return fn(input, **{k: getattr(self, k) for k in names})

    def extra_repr(self):
        if shown is not None:
            return shown.format(**{k: getattr(self, k) for k in names})
        parts = [f"{k}={getattr(self, k)!r}" for k in names if k != "inplace"]
        if getattr(self, "inplace", False):
            parts.append("inplace=True")
        return ", ".join(parts)

    return type(
        name,
        (Module,),
        {
            "__init__": __init__,
            "forward": forward,
            "extra_repr": extra_repr,
            "__doc__": doc,
            "__module__": __name__,
            "_op_name": fn.__name__,
        },
    )


def _softmax2d(input):
    if input.ndim not in (3, 4):
        raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
    return F.softmax(input, -3)


ACTIVATIONS = {
    "ReLU": (F.relu, {"inplace": False}, "max(0, x)"),
    "ReLU6": (F.relu6, {"inplace": False}, "min(max(0, x), 6)"),
    "GELU": (F.gelu, {"approximate": "none"}, "x * Phi(x) (or its tanh approximation)"),
    "SiLU": (F.silu, {"inplace": False}, "x * sigmoid(x)"),
    "Mish": (F.mish, {"inplace": False}, "x * tanh(softplus(x))"),
    "Sigmoid": (F.sigmoid, {}, "1 / (1 + exp(-x))"),
    "Tanh": (F.tanh, {}, "tanh(x)"),
    "Hardswish": (F.hardswish, {"inplace": False}, "x * relu6(x + 3) / 6"),
    "Hardsigmoid": (F.hardsigmoid, {"inplace": False}, "relu6(x + 3) / 6"),
    "LeakyReLU": (
        F.leaky_relu,
        {"negative_slope": 0.01, "inplace": False},
        "x if x > 0 else slope * x",
    ),
    "ELU": (F.elu, {"alpha": 1.0, "inplace": False}, "x if x > 0 else alpha * (exp(x) - 1)"),
    "CELU": (
        F.celu,
        {"alpha": 1.0, "inplace": False},
        "x if x > 0 else alpha * (exp(x/alpha) - 1)",
    ),
    "SELU": (F.selu, {"inplace": False}, "scale * elu(x, alpha) with fixed constants"),
    "Softplus": (F.softplus, {"beta": 1.0, "threshold": 20.0}, "log(1 + exp(beta x)) / beta"),
    "Softsign": (F.softsign, {}, "x / (1 + |x|)"),
    "LogSigmoid": (F.logsigmoid, {}, "log(sigmoid(x))"),
    "Softmax": (F.softmax, {"dim": None}, "exp(x) / sum(exp(x)) along dim"),
    "LogSoftmax": (F.log_softmax, {"dim": None}, "log(softmax(x)) along dim"),
    "Softmin": (F.softmin, {"dim": None}, "softmax(-x) along dim"),
    "GLU": (F.glu, {"dim": -1}, "a * sigmoid(b) for the two halves along dim"),
    "Threshold": (
        F.threshold,
        {"threshold": REQUIRED, "value": REQUIRED, "inplace": False},
        "x if x > threshold else value",
    ),
    "Hardshrink": (F.hardshrink, {"lambd": 0.5}, "x if |x| > lambd else 0", "{lambd}"),
    "Softshrink": (
        F.softshrink,
        {"lambd": 0.5},
        "x - lambd * sign(x) if |x| > lambd else 0",
        "{lambd}",
    ),
    "Tanhshrink": (F.tanhshrink, {}, "x - tanh(x)"),
    "Softmax2d": (_softmax2d, {}, "softmax over the channels (dim -3) of (N, C, H, W)"),
}

for _name, _row in ACTIVATIONS.items():
    globals()[_name] = _activation(_name, *_row)
del _name, _row


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``; ``min_value``/``max_value`` are PyTorch's deprecated
    names for the bounds."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        for old, new, given in (
            ("min_value", "min_val", min_value),
            ("max_value", "max_val", max_value),
        ):
            if given is not None:
                warnings.warn(
                    f"keyword argument `{old}` is deprecated and renamed to `{new}`",
                    FutureWarning,
                    stacklevel=2,
                )
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(
                f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})"
            )

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        text = f"min_val={self.min_val}, max_val={self.max_val}"
        return text + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """``max(0, x) + a * min(0, x)`` with a learned slope ``a`` (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(ember.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn_init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element while
    training, and is their mean in evaluation."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        text = f"lower={self.lower}, upper={self.upper}"
        return text + (", inplace=True" if self.inplace else "")


__all__ = [*ACTIVATIONS, "Hardtanh", "PReLU", "RReLU"]
