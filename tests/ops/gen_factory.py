"""Sample generators for factories (empty, full, eye, arange, linspace) and random ops.

Factories take the device as an argument, so these are the generators that use ``device``.
Random samples carry a ``Seed`` for their generator argument: each materialisation builds a
fresh generator with that seed, so a property test can call an op twice and expect equal draws.
"""

from __future__ import annotations

import numpy as np

import ember

from .sampling import LARGE, Arr, Sample, Seed, arr, call_args, scalar

C, T, S, N = "contiguous", "transposed", "sliced", "negative"

FACTORY_CASES = (
    {"size": (3, 4), "n": 3},
    {"size": (0,), "n": 3, "m": 5},
    {"size": (), "n": 0},
    {"size": (LARGE,), "n": 200, "m": 200},
)


def factory(op, dtype, device, rng):
    """empty/full/eye with an explicit dtype, then with the dtype inferred."""
    for case in FACTORY_CASES:
        args = call_args(op, **case, fill_value=scalar(dtype, rng), dtype=dtype, device=device)
        yield Sample(args, dtype=dtype)
    if dtype is ember.float32:
        yield Sample(call_args(op, size=(2, 3), n=2, fill_value=2.5, device=device), dtype=dtype)
    if dtype is ember.int64 and any(a.name == "fill_value" for a in op.schema.args):
        yield Sample(call_args(op, size=(2, 3), fill_value=3, device=device), dtype=dtype)


def _fits(dtype, *numbers) -> bool:
    if dtype.is_floating_point:
        return True
    info = np.iinfo(dtype.np) if dtype is not ember.bool else np.iinfo(np.uint8)
    return all(info.min <= v <= info.max for v in numbers)


ARANGE_CASES = ((5,), (2, 9), (1, 10, 3), (10, 1, -2), (0, 0), (-3, 4, 2), (0, LARGE))
ARANGE_FLOAT_CASES = ((0.5, 3.0, 0.25), (1.0, -1.0, -0.3))


def arange(op, dtype, device, rng):
    cases = ARANGE_CASES + (ARANGE_FLOAT_CASES if dtype.is_floating_point else ())
    for case in cases:
        start, end, step = (0, case[0], 1) if len(case) == 1 else (*case, 1)[:3]
        if _fits(dtype, start, end):
            yield Sample((start, end, step, dtype, device), dtype=dtype)
    if dtype is ember.int64:
        yield Sample((2, 7, 1, None, device), dtype=dtype, desc="inferred int64")
    if dtype is ember.float32:
        yield Sample((0.0, 2.0, 0.5, None, device), dtype=dtype, desc="inferred float")


LINSPACE_CASES = ((0, 1, 5), (-2, 3, 6), (1, 1, 1), (0, 10, 0), (5, -5, 11), (0, 1, LARGE))


def linspace(op, dtype, device, rng):
    for start, end, steps in LINSPACE_CASES:
        if _fits(dtype, start, end):
            yield Sample((start, end, steps, dtype, device), dtype=dtype)


# Arguments beyond the tensor, by op: one sample per dict and input.
RANDOM_ARGS = {
    "uniform_": [{}, {"from": -2.0, "to": 3.0}],
    "normal_": [{}, {"mean": 1.0, "std": 2.0}],
    "random_": [{}, {"from": -3, "to": 7}],
    "bernoulli": [{}, {"p": 0.25}],
    "bernoulli_": [{}, {"p": 0.25}],
    "multinomial": [
        {"num_samples": 3, "replacement": True},
        {"num_samples": 4, "replacement": False},
    ],
    "randperm": [{"n": 100}, {"n": 1}, {"n": 0}],
    "cauchy_": [{}, {"median": -2.0, "sigma": 0.5}],
    "exponential_": [{}, {"lambd": 2.5}],
    "geometric_": [{"p": 0.5}, {"p": 0.2}],
    "log_normal_": [{}, {"mean": 0.5, "std": 0.25}],
    # the variable-draw samplers: their parameters are the input (and count, below)
    "_standard_gamma": [{}],
    "poisson": [{}],
    "binomial": [{}],
    "_sample_dirichlet": [{}],
}
SAMPLERS = ("_standard_gamma", "poisson", "binomial", "_sample_dirichlet")


def _random_input(op, dtype, shape, layout, rng) -> Arr:
    if op.name == "multinomial":  # non-negative weights, some zero
        weights = rng.random(shape) * (rng.random(shape) > 0.3)
        # 4 positive ones per row: drawing 4 without replacement needs them (torch raises).
        weights[..., :4] += 0.5
        return Arr(weights.astype(dtype.np), layout)
    if op.name in ("bernoulli", "binomial"):  # probabilities
        return arr(dtype, shape, rng, layout, low=0.0, high=1.0)
    if op.name in SAMPLERS:  # positive shapes and rates, both sides of the algorithms' switches
        return arr(dtype, shape, rng, layout, low=0.1, high=30.0)
    return arr(dtype, shape, rng, layout)


def _bounds(params: dict, dtype) -> dict:
    """random_'s range within what ``dtype`` holds."""
    if "from" not in params or dtype.is_floating_point:
        return params
    if dtype is ember.bool:
        return {"from": 0, "to": 2}
    return {"from": 2, "to": 100} if dtype is ember.uint8 else params


def random(op, dtype, device, rng):
    """In-place fills and sampling ops: a large input (for statistics) and odd layouts."""
    inputs = (((6,), C), ((3, 8), T)) if op.name == "multinomial" else RANDOM_INPUTS
    for shape, layout in inputs:
        x = _random_input(op, dtype, shape, layout, rng)
        for i, params in enumerate(RANDOM_ARGS[op.name]):
            named = {**_bounds(params, dtype), "generator": Seed(1234 + i), "device": device}
            named |= {"prob": x, "count": Arr(np.round(x.values * 40).astype(x.values.dtype), C)}
            if op.name == "randperm":
                named["dtype"] = dtype
            yield Sample(call_args(op, self=x, input=x, **named), desc=f"{x!r} {params}")
        if op.name == "randperm":
            return


RANDOM_INPUTS = (((LARGE,), C), ((30, 20), T), ((0,), C), ((), C))
