"""Sample generators of the special-function rows (dispatcher/optable/special.py): the
elementwise layouts of gen_elementwise, with each function's domain and its integer arguments
(polygamma's order, mvlgamma's p, the polynomials' degree)."""

from __future__ import annotations

import numpy as np

import ember

from . import gen_elementwise as ew
from .sampling import Arr, Sample, arr, integral_floats, scalar


def polygamma(op, dtype, device, rng):
    spec = {"low": 0.2, "high": 8.0}
    for n in (0, 1, 2, 3):
        for shape, layout in ew.UNARY_CASES[::3]:
            yield Sample((arr(dtype, shape, rng, layout, **spec), n))


def logit(op, dtype, device, rng):
    yield from ew.unary(op, dtype, device, rng)
    x = arr(dtype, (3, 4), rng, low=-0.2, high=1.2)
    yield Sample((x, 0.1))
    yield Sample((x, 0.0))


def mvlgamma(op, dtype, device, rng):
    if dtype is ember.bool:  # only True satisfies x > (p - 1) / 2, for p = 1 only
        yield Sample((Arr(np.ones((3, 4), dtype=bool)), 1))
        return
    for p in (1, 2, 3, 5):
        for shape, layout in ew.UNARY_CASES[::3]:
            yield Sample((arr(dtype, shape, rng, layout, low=p / 2, high=p / 2 + 6), p))


def gamma_inc(op, dtype, device, rng):
    return ew.binary(
        op, dtype, device, rng, {0: {"low": 0.1, "high": 6.0}, 1: {"low": 0.0, "high": 8.0}}
    )


def zeta(op, dtype, device, rng):
    return ew.binary(
        op, dtype, device, rng, {0: {"low": 1.1, "high": 6.0}, 1: {"low": 0.2, "high": 5.0}}
    )


def xlog1py(op, dtype, device, rng):
    return ew.binary(op, dtype, device, rng, {0: {"zeros": 0.3}, 1: {"low": -0.9, "high": 4.0}})


def polynomial(op, dtype, device, rng):
    """x in [-1, 1] (and shifted [0, 1] for the shifted ones, beyond for the recurrences' growth),
    the degree n a small integer, also negative (0 in PyTorch) and as a Python scalar."""
    x_spec = {"low": -1.2, "high": 1.2}
    for case in ew.BINARY_CASES[:-2]:
        (xs, xl), (ns, nl) = case
        yield Sample((arr(dtype, xs, rng, xl, **x_spec), _degrees(dtype, ns, nl, rng)))
    x = arr(dtype, (3, 4), rng, **x_spec)
    for degree in (0, 1, 2, 5, 9):
        yield Sample((x, degree))
    yield Sample((scalar(dtype, rng, **x_spec), _degrees(dtype, (4,), "contiguous", rng)))


def _degrees(dtype, shape, layout, rng) -> Arr:
    """Whole numbers in [-1, 7] ([0, 7] unsigned) as ``dtype``, in ``layout`` (expanded: one row
    broadcast)."""
    low = 0 if dtype in (ember.uint8, ember.bool) else -1
    if layout == "expanded" and shape:
        row = integral_floats(dtype, (1, *shape[1:]), rng, low, 7)
        return Arr(np.broadcast_to(row, shape), layout)
    return Arr(integral_floats(dtype, shape, rng, low, 7), layout)


GENERATORS = {
    "polygamma": polygamma,
    "logit": logit,
    "mvlgamma": mvlgamma,
    "gamma_inc": gamma_inc,
    "zeta": zeta,
    "xlog1py": xlog1py,
    "polynomial": polynomial,
}
