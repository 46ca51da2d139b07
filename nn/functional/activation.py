"""Activation functions (``nn.functional.relu`` etc.): thin wrappers over table ops."""

from __future__ import annotations

import ember
from ember.autograd.graph_names import present
from ember.dispatcher.optable import OPS

from ._out import into

# The shrinks have no row of their own: their out= follows gelu's, PyTorch's structured unary
# activations' (out's dtype must be the result's).
_SHRINK_RULE = "gelu"


def _apply(name: str, input, inplace: bool, *args):
    """``OPS[name]`` out of place, or its in-place row ``name_`` (whose autograd formula works
    from the result, so the input may be overwritten)."""
    return OPS[name + "_" if inplace else name](input, *args)


def relu(input, inplace: bool = False):
    return _apply("relu", input, inplace)


def relu6(input, inplace: bool = False):
    return _apply("relu6", input, inplace)


def gelu(input, approximate: str = "none", *, out=None):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got '{approximate}'")
    return into("gelu", "gelu", out, (input,), lambda: OPS["gelu"](input, approximate))


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


def softplus(input, beta: float = 1.0, threshold: float = 20.0, *, out=None):
    return into(
        "softplus", "softplus", out, (input,), lambda: OPS["softplus"](input, beta, threshold)
    )


def softsign(input):
    return OPS["softsign"](input)


def logsigmoid(input, *, out=None):
    return into("logsigmoid", "logsigmoid", out, (input,), lambda: OPS["logsigmoid"](input))


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
    return present(a * ember.sigmoid(b), "GluBackward0", input, saved={"self": input, "dim": dim})


def _threshold(input, threshold: float, value: float, inplace: bool):
    below = input <= threshold
    return input.masked_fill_(below, value) if inplace else input.masked_fill(below, value)


def threshold(input, threshold: float, value: float, inplace: bool = False):
    """``input`` where it exceeds ``threshold``, else ``value`` (no gradient there)."""
    return _threshold(input, threshold, value, inplace)


def hardshrink(input, lambd: float = 0.5, *, out=None):
    """``input`` where ``|input| > lambd``, else 0."""
    return into("hardshrink", _SHRINK_RULE, out, (input,), lambda: _hardshrink(input, lambd))


def _hardshrink(input, lambd):
    return input.masked_fill(input.abs() <= lambd, 0)


def softshrink(input, lambd: float = 0.5, *, out=None):
    """``input`` moved ``lambd`` towards 0, and 0 where ``|input| <= lambd``."""
    if lambd < 0:
        raise RuntimeError(
            f"softshrink: lambda must be in range [0, inf) for input dtype "
            f"{input.dtype.name}, but found {lambd}"
        )
    return into("softshrink", _SHRINK_RULE, out, (input,), lambda: _softshrink(input, lambd))


def _softshrink(input, lambd):
    return (input - input.sign() * lambd).masked_fill(input.abs() <= lambd, 0)


def tanhshrink(input):
    return input - ember.tanh(input)


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, ``weight`` one value or one per channel (dim 1)."""
    if weight.ndim > 1:
        raise RuntimeError(
            f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}"
        )
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() not in (1, channels):
        raise RuntimeError(
            f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight.numel()} and channel size = {channels}."
        )
    if weight.numel() != 1:
        weight = weight.view([channels] + [1] * (input.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return ember.where(input > 0, input, weight * input)


def _rrelu_slopes(input, lower, upper, training):
    """Per element slope for the negatives: uniform in [lower, upper] while training, their
    mean otherwise (a Python number); 1 for the non-negatives."""
    if not training:
        return (lower + upper) / 2
    noise = ember.rand(input.shape, dtype=input.dtype, device=input.device) * (upper - lower)
    return ember.where(input > 0, 1.0, noise + lower)  # PyTorch draws for x <= 0


def rrelu(
    input,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
):
    """Randomised leaky ReLU: negative slopes drawn from U(lower, upper) while training, their
    mean in evaluation."""
    slopes = _rrelu_slopes(input, lower, upper, training)
    if not training:
        return leaky_relu(input, slopes, inplace)
    out = input * slopes
    return input.copy_(out) if inplace else out


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """Samples from the Gumbel-softmax distribution; ``hard`` gives one-hot samples whose
    gradient is the soft sample's (straight-through)."""
    uniform = ember.rand(logits.shape, dtype=logits.dtype, device=logits.device)
    # -log of an Exp(1) sample -log(1 - U); ``eps`` (what it was for in PyTorch's first
    # version) keeps U = 0 from giving +inf
    gumbels = -ember.log((-ember.log1p(-uniform)).clamp(min=eps))
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = ember.zeros_like(logits).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft


# In-place functional forms (torch.nn.functional.relu_ etc.).
def relu_(input):
    return relu(input, inplace=True)


def elu_(input, alpha: float = 1.0):
    return elu(input, alpha, inplace=True)


def celu_(input, alpha: float = 1.0):
    return celu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold: float, value: float):
    return _threshold(input, threshold, value, True)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, inplace=True)
