"""Activation modules: each a thin shell over a functional form, built from one table."""

from __future__ import annotations

from .. import functional as F
from ._signature import signature
from .module import Module


def _activation(name: str, fn, params: dict, doc: str):
    """A Module class whose constructor takes ``params`` (PyTorch's names, order and defaults)
    and whose forward calls ``fn(input, **params)``."""
    init = signature(defaults=params.items())
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
        shown = [f"{k}={getattr(self, k)!r}" for k in names if k != "inplace"]
        if getattr(self, "inplace", False):
            shown.append("inplace=True")
        return ", ".join(shown)

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
    "Hardtanh": (
        F.hardtanh,
        {"min_val": -1.0, "max_val": 1.0, "inplace": False},
        "clamp(x, min, max)",
    ),
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
}

for _name, (_fn, _params, _doc) in ACTIVATIONS.items():
    globals()[_name] = _activation(_name, _fn, _params, _doc)
del _name, _fn, _params, _doc

__all__ = list(ACTIVATIONS)
