"""Sample generators for the activations' backward rows (issue 20):
dispatcher/optable/activation_backward.py and _log_softmax_backward_data."""

from __future__ import annotations

import numpy as np

from .sampling import LARGE, Arr, Sample, arr

C, T, S, N, E = "contiguous", "transposed", "sliced", "negative", "expanded"
# (shape, layout of grad, layout of the second operand): every layout, a 0-d pair, a size
# above the CPU's OpenMP threshold, and a broadcast grad
PAIRS = (
    ((4, 5), C, C),
    ((3, 4), T, S),
    ((6,), N, C),
    ((3, 4), E, C),
    ((), C, C),
    ((LARGE + 3,), C, C),
)


def _pairs(dtype, rng, **second):
    for shape, layout_g, layout_x in PAIRS:
        yield arr(dtype, shape, rng, layout_g), arr(dtype, shape, rng, layout_x, **second)


def activation_backward(op, dtype, device, rng):
    """A gradient and the forward's input."""
    for grad, x in _pairs(dtype, rng):
        yield Sample((grad, x))


def gelu_backward(op, dtype, device, rng):
    """Both forms, with inputs past the tails (|x| up to 12)."""
    for approximate in ("none", "tanh"):
        for grad, x in _pairs(dtype, rng, low=-12.0, high=12.0):
            yield Sample((grad, x, approximate))


def sigmoid_backward(op, dtype, device, rng):
    """A gradient and a sigmoid's output, in (0, 1)."""
    for grad, y in _pairs(dtype, rng, low=0.0, high=1.0):
        yield Sample((grad, y))


def tanh_backward(op, dtype, device, rng):
    """A gradient and a tanh's output, in (-1, 1)."""
    for grad, y in _pairs(dtype, rng, low=-1.0, high=1.0):
        yield Sample((grad, y))


def threshold_backward(op, dtype, device, rng):
    """Thresholds that the input hits exactly (x <= threshold gives 0), and relu's 0. (PyTorch
    casts the threshold to the dtype: a fractional one for integers would test the cast.)"""
    for threshold in (0, 1, -2.5 if dtype.is_floating_point else 3):
        for grad, x in _pairs(dtype, rng, zeros=0.2):
            yield Sample((grad, x, threshold))


def log_softmax_backward_data(op, dtype, device, rng):
    """A log_softmax's output and a gradient, along any dim, a 0-d one."""
    for shape, layout, dim in (((5,), C, 0), ((3, 4), T, 1), ((2, 3, 4), S, -2), ((), C, 0)):
        logits = rng.uniform(-2, 2, shape)
        axis = dim % len(shape) if shape else None
        shifted = logits - logits.max(axis, keepdims=True)
        y = shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))
        yield Sample((arr(dtype, shape, rng, layout), Arr(y.astype(dtype.np)), dim, dtype))


GENERATORS = {
    "activation_backward": activation_backward,
    "gelu_backward": gelu_backward,
    "sigmoid_backward": sigmoid_backward,
    "tanh_backward": tanh_backward,
    "threshold_backward": threshold_backward,
    "log_softmax_backward_data": log_softmax_backward_data,
}
