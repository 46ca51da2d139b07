"""Sample generators for elementwise ops: unary, binary and ternary, by operand shapes/layouts.

Every generator covers 0-dim, 1-element and 0-size tensors, broadcasting (stride-0 operands),
non-contiguous and negative-stride operands, Python scalars, and one case above the OpenMP
threshold. ``specs`` say, per operand position, what values it needs (range, nonzero).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import ember

from .sampling import LARGE, Sample, arr, scalar, values

C, T, S, N, E = "contiguous", "transposed", "sliced", "negative", "expanded"

UNARY_CASES = (
    ((), C),
    ((1,), C),
    ((0,), C),
    ((2, 0, 3), C),
    ((7,), C),
    ((3, 5), C),
    ((4, 6), T),
    ((3, 4), S),
    ((9,), N),
    ((2, 3, 4), N),
    ((4, 5), E),
    ((LARGE,), C),
    ((250, 160), T),
)

# Parameter values other than the schema defaults that deserve a sample (positional, in order).
UNARY_PARAMS = {
    "gelu": [("tanh",)],
    "elu": [(0.5,)],
    "celu": [(2.0,)],
    "leaky_relu": [(0.2,)],
    "softplus": [(2.0, 3.0)],
    "hardtanh": [(-0.5, 2.0)],
    "nan_to_num": [(1.5, 100.0, -100.0)],
}

BINARY_CASES = (
    (((5,), C), ((5,), C)),
    (((3, 1), C), ((1, 4), C)),
    (((2, 3, 4), C), ((4,), C)),
    (((), C), ((3,), C)),
    (((2, 3), C), ((), C)),
    (((), C), ((), C)),
    (((1,), C), ((1,), C)),
    (((0, 3), C), ((1, 3), C)),
    (((4, 6), T), ((4, 6), S)),
    (((9,), N), ((9,), C)),
    (((3, 4), E), ((3, 4), N)),
    (((LARGE,), C), ((LARGE,), C)),
    (((200, 200), T), ((200, 1), C)),
)

TERNARY_CASES = (
    (((3, 4), C), ((3, 4), C), ((3, 4), C)),
    (((3, 1), C), ((1, 4), C), ((4,), C)),
    (((), C), ((2, 3), C), ((3,), C)),
    (((2, 3), C), ((), C), ((), C)),
    (((0, 2), C), ((1, 2), C), ((0, 1), C)),
    (((4, 6), T), ((4, 6), S), ((4, 6), N)),
    (((3, 4), E), ((3, 4), C), ((1, 4), C)),
    (((LARGE,), C), ((LARGE,), C), ((1,), C)),
)


def _spec(specs, i, dtype) -> dict:
    found = specs.get(i, {})
    return found(dtype) if callable(found) else found


def _operand(dtype, shape, layout, rng, spec):
    return arr(dtype, shape, rng, layout, **spec)


def unary(op, dtype, device, rng, nonzero=False, special=False):
    low, high = op.defn.domain or (None, None)
    spec = {"low": low, "high": high, "nonzero": nonzero}
    for shape, layout in UNARY_CASES:
        yield Sample((arr(dtype, shape, rng, layout, **spec),))
    for params in UNARY_PARAMS.get(op.name, ()):
        yield Sample((arr(dtype, (3, 4), rng, **spec), *params))
    if special:
        yield Sample((arr_special(dtype, rng),), desc="special values")


def arr_special(dtype, rng):
    """NaN, infinities, signed zeros and extremes mixed with ordinary values."""
    from .sampling import Arr

    base = values(dtype, (4, 5), rng)
    if dtype.is_floating_point:
        info = ml_dtypes.finfo(dtype.np)
        picks = [np.nan, np.inf, -np.inf, -0.0, 0.0, float(info.max), float(info.min), 1e-3]
    elif dtype is ember.bool:
        return Arr(base)
    else:
        info = np.iinfo(dtype.np)
        picks = [int(info.min), int(info.max), 0]
    flat = base.reshape(-1)
    flat[: len(picks)] = np.array(picks).astype(dtype.np)
    return Arr(base)


def unary_special(op, dtype, device, rng):
    return unary(op, dtype, device, rng, special=True)


def unary_nonzero(op, dtype, device, rng):
    return unary(op, dtype, device, rng, nonzero=True)


def _nary(op, dtype, rng, cases, specs, dtypes=None):
    dtypes = dtypes or {}
    for case in cases:
        args = tuple(
            _operand(dtypes.get(i, dtype), shape, layout, rng, _spec(specs, i, dtype))
            for i, (shape, layout) in enumerate(case)
        )
        yield Sample(args)


def _with_scalars(op, dtype, rng, arity, specs, dtypes=None):
    """Each non-leading operand in turn as a Python scalar; for binary ops, also the first."""
    dtypes = dtypes or {}
    positions = range(arity) if arity == 2 else range(1, arity)
    for pos in positions:
        args = []
        for i in range(arity):
            d = dtypes.get(i, dtype)
            spec = _spec(specs, i, dtype)
            args.append(scalar(d, rng, **spec) if i == pos else arr(d, (3, 4), rng, **spec))
        yield Sample(tuple(args))
    if arity == 2:
        first = arr(dtype, (), rng, **_spec(specs, 0, dtype))
        yield Sample((first, scalar(dtype, rng, **_spec(specs, 1, dtype))))


def binary(op, dtype, device, rng, specs=None):
    specs = specs or {}
    yield from _nary(op, dtype, rng, BINARY_CASES, specs)
    yield from _with_scalars(op, dtype, rng, 2, specs)


def binary_nonzero(op, dtype, device, rng):
    return binary(op, dtype, device, rng, {1: {"nonzero": True}})


def binary_positive(op, dtype, device, rng):
    """xlogy: the second operand positive, the first with exact zeros mixed in."""
    return binary(op, dtype, device, rng, {0: {"zeros": 0.3}, 1: {"low": 0.1, "high": 4.0}})


def _pow_specs(dtype):
    if dtype.is_floating_point:
        return {0: {"low": 0.1, "high": 3.0}, 1: {"low": -2.0, "high": 2.0}}
    return {0: {"low": -3, "high": 3}, 1: {"low": 0, "high": 3}}


def pow_(op, dtype, device, rng):
    return binary(op, dtype, device, rng, _pow_specs(dtype))


def shift(op, dtype, device, rng):
    bits = 8 * dtype.itemsize if dtype is not ember.bool else 1
    return binary(op, dtype, device, rng, {1: {"low": 0, "high": min(bits - 1, 5)}})


def ternary(op, dtype, device, rng, specs=None, dtypes=None):
    specs = specs or {}
    yield from _nary(op, dtype, rng, TERNARY_CASES, specs, dtypes)
    yield from _with_scalars(op, dtype, rng, 3, specs, dtypes)
    params = [a for a in op.schema.args[3:] if a.type == "Scalar"]
    if params:  # addcmul/addcdiv's value=
        value = scalar(dtype, rng, low=-2, high=2, nonzero=True)
        first = next(_nary(op, dtype, rng, TERNARY_CASES[:1], specs, dtypes))
        yield Sample((*first.args, value))


def ternary_nonzero(op, dtype, device, rng):
    return ternary(op, dtype, device, rng, {2: {"nonzero": True}})


def where(op, dtype, device, rng):
    return ternary(op, dtype, device, rng, dtypes={0: ember.bool})


def clamp(op, dtype, device, rng):
    yield from ternary(op, dtype, device, rng)
    x = arr(dtype, (3, 4), rng)
    yield Sample((x, None, scalar(dtype, rng)))
    yield Sample((x, scalar(dtype, rng), None))
    yield Sample((x, None, arr(dtype, (4,), rng)))
    yield Sample((x, arr(dtype, (3, 1), rng), None))
