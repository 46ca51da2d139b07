"""The table of nn layers and functions that test_breadth.py runs against PyTorch.

A module case names a class of ``nn``, its constructor arguments and its inputs; a function case
names a function of ``nn.functional``, its keyword options and its inputs. An input is a shape
(random normal floats, which get gradients) or a generator ``fn(rng, dtype)`` for integer targets,
positive values, lengths and the like.
"""

from __future__ import annotations

import numpy as np
import pytest


def ints(high, shape, low=0):
    """Integer (int64) inputs in [low, high)."""
    return lambda rng, dtype: rng.integers(low, high, size=shape).astype(np.int64)


def positive(shape, low=0.1):
    """Floats in [low, low + 2)."""
    return lambda rng, dtype: (rng.random(shape) * 2 + low).astype(dtype)


def unit(shape):
    """Floats in (0, 1), e.g. probabilities."""
    return lambda rng, dtype: (rng.random(shape) * 0.98 + 0.01).astype(dtype)


def signs(shape):
    """-1 or 1 (as floats), the targets of margin losses."""
    return lambda rng, dtype: rng.choice([-1.0, 1.0], size=shape).astype(dtype)


def const(value):
    """A fixed array (its dtype kept, except floats that follow the case's dtype)."""

    def make(rng, dtype):
        array = np.asarray(value)
        return array.astype(dtype) if array.dtype.kind == "f" else array

    return make


def inputs_for(specs, rng, dtype) -> list:
    out = []
    for spec in specs:
        if callable(spec):
            out.append(spec(rng, dtype))
        elif isinstance(spec, tuple):
            out.append((rng.standard_normal(spec) * 2).astype(dtype))
        else:
            out.append(spec)
    return out


def mcase(name, args=(), kwargs=None, inputs=((2, 3),), forward=None, id=None, f64=True):
    label = id or f"{name}-{args}-{kwargs or ''}"
    return pytest.param(name, args, kwargs or {}, inputs, forward or {}, f64, id=label)


def fcase(name, kwargs=None, inputs=((2, 3),), id=None, f64=True):
    label = id or f"{name}-{kwargs or ''}"
    return pytest.param(name, kwargs or {}, inputs, f64, id=label)


# Values near a kink (|x| == lambd...) make finite differences and torch disagree by nothing but
# the convention at the kink; random normals * 2 avoid them with probability 1.
ACTIVATION_MODULES = [
    mcase("Threshold", (0.1, 20.0)),
    mcase("Threshold", (-0.5, 2.0, False), inputs=[(3, 4, 2)]),
    mcase("Hardshrink"),
    mcase("Hardshrink", (1.2,)),
    mcase("Softshrink"),
    mcase("Softshrink", (0.8,), inputs=[(2, 3, 4)]),
    mcase("Tanhshrink"),
    mcase("Softmax2d", inputs=[(2, 3, 4, 5)]),
    mcase("Softmax2d", inputs=[(3, 4, 5)]),
    mcase("PReLU"),
    mcase("PReLU", (3, 0.1), inputs=[(2, 3, 4)]),
    mcase("PReLU", (3,), inputs=[(4, 3)]),
    mcase("PReLU", inputs=[(5,)]),
    mcase("RReLU", forward=None, id="RReLU-eval"),
]

ACTIVATION_FUNCTIONS = [
    fcase("hardshrink", {"lambd": 0.3}),
    fcase("softshrink", {"lambd": 0.0}),
    fcase("tanhshrink"),
    fcase("prelu", inputs=[(2, 3, 4), (3,)]),
    fcase("prelu", inputs=[(2, 3), (1,)]),
    fcase("rrelu", {"lower": 0.2, "upper": 0.4}),
    fcase("threshold", {"threshold": 0.5, "value": -3.0}),
]

MODULES = ACTIVATION_MODULES
FUNCTIONS = ACTIVATION_FUNCTIONS
