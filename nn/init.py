"""Parameter initialisation (``nn.init``), with PyTorch's formulas; all run under no_grad."""

from __future__ import annotations

import math
import warnings

import ember


def calculate_gain(nonlinearity: str, param=None) -> float:
    linear = (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    )
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = 1
    for size in tensor.shape[2:]:
        receptive *= size
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    with ember.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    with ember.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor, val):
    with ember.no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with ember.no_grad():
        tensor.zero_()
        tensor.diagonal().fill_(1)
    return tensor


def dirac_(tensor, groups=1):
    with ember.no_grad():
        tensor.zero_()
        out_per_group = tensor.shape[0] // groups
        centre = [s // 2 for s in tensor.shape[2:]]
        for g in range(groups):
            for d in range(min(out_per_group, tensor.shape[1])):
                tensor[(g * out_per_group + d, d, *centre)] = 1
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _empty(tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if _empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if _empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal samples redrawn into [a, b] by inverse-CDF sampling (PyTorch's method)."""

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    low, high = cdf((a - mean) / std), cdf((b - mean) / std)
    with ember.no_grad():
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        values = ember.erfinv(tensor) if hasattr(ember, "erfinv") else _erfinv(tensor)
        tensor.copy_(ember.clamp(values * (std * math.sqrt(2.0)) + mean, a, b))
    return tensor


def _erfinv(y):
    """Inverse error function (Giles' approximation refined by two Newton steps)."""
    w = -ember.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws, wl = w - 2.5, ember.sqrt(ember.clamp(w, min=5.0)) - 3.0
    ps = 2.81022636e-08
    for c in (
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ):
        ps = c + ps * ws
    pl = -0.000200214257
    for c in (
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ):
        pl = c + pl * wl
    x = ember.where(small, ps, pl) * y
    for _ in range(2):
        err = ember.erf(x) - y
        x = x - err / (2.0 / math.sqrt(math.pi) * ember.exp(-x * x))
    return x


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR of a normal sample (computed with numpy)."""
    import numpy as np

    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    sample = ember.randn(rows, cols, dtype=ember.float64, generator=generator).numpy()
    if rows < cols:
        sample = sample.T
    q, r = np.linalg.qr(sample)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with ember.no_grad():
        tensor.copy_(
            ember.tensor(q * gain, dtype=tensor.dtype, device=tensor.device).view(tensor.shape)
        )
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    with ember.no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            picks = ember.randperm(rows, generator=generator)[:zeros]
            tensor[picks, c] = 0
    return tensor


uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_
dirac = dirac_
eye = eye_
sparse = sparse_
