"""Sample generators for the nn family's aten entry points (issue 13, batch ops5nn):
dispatcher/optable/surface5_ops5nn.py."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample, arr

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def softmax_backward_data(op, dtype, device, rng):
    """A softmax's output (rows that sum to one) and a gradient, along any dim, a 0-d one."""
    for shape, layout, dim in (((5,), C, 0), ((3, 4), T, 1), ((2, 3, 4), S, -2), ((), C, 0)):
        logits = rng.uniform(-2, 2, shape)
        axis = dim % len(shape) if shape else None
        y = np.exp(logits - logits.max(axis, keepdims=True))
        y = y / y.sum(axis, keepdims=True)
        grad = arr(dtype, shape, rng, layout)
        yield Sample((grad, Arr(y.astype(dtype.np)), dim, dtype))


def native_dropout_backward(op, dtype, device, rng):
    """A gradient, a bool mask, scales that drop everything, keep it, or scale it."""
    for shape, layout, scale in (((4, 5), C, 2.0), ((3, 4), T, 0.0), ((6,), N, 1.25), ((), C, 1.0)):
        mask = Arr(rng.uniform(0, 1, shape) < 0.6)
        yield Sample((arr(dtype, shape, rng, layout), mask, scale))


GENERATORS = {
    "softmax_backward_data": softmax_backward_data,
    "native_dropout_backward": native_dropout_backward,
}
