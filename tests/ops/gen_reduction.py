"""Sample generators for reductions and scans: dims (None, int, negative, tuple, ()), keepdim,
empty inputs and empty reductions, non-contiguous inputs, and large inputs of whole numbers (so
that any summation order gives the exact result)."""

from __future__ import annotations

import math

import ember

from .sampling import LARGE, Arr, Sample, arr, call_args, integral_floats

C, T, S, N, E = "contiguous", "transposed", "sliced", "negative", "expanded"

# (shape, layout, dim, keepdim)
REDUCE_CASES = (
    ((), C, None, False),
    ((5,), C, 0, False),
    ((1,), C, None, True),
    ((0,), C, None, False),
    ((3, 0), C, 1, True),
    ((3, 0), C, 0, False),
    ((2, 3, 4), C, (0, 2), False),
    ((2, 3, 4), C, -1, True),
    ((2, 3, 4), N, 1, False),
    ((4, 6), T, 0, False),
    ((4, 6), S, None, True),
    ((3, 4), C, (), False),
    ((3, 4), E, 1, False),
    ((LARGE,), C, None, False),
    ((250, 160), T, 1, False),
)

NORM_ORDERS = ("fro", 1, 2, math.inf, -math.inf, 0, 3)


def _reduced(shape: tuple, dim) -> tuple:
    if dim is None or dim == ():
        return tuple(range(len(shape)))
    dims = (dim,) if isinstance(dim, int) else dim
    return tuple(d % max(len(shape), 1) for d in dims)


def _empty_reduction(shape: tuple, dim) -> bool:
    return any(shape[d] == 0 for d in _reduced(shape, dim) if shape)


def _input(dtype, shape, layout, rng) -> Arr:
    if math.prod(shape) >= LARGE and dtype.is_floating_point:
        v = integral_floats(dtype, shape, rng)
        return Arr(v) if layout == C else Arr(v, layout)
    return arr(dtype, shape, rng, layout, low=-2.0 if dtype.is_floating_point else -3, high=3)


def _cases(op, nonempty: bool, int_dims: bool = False, need_dims: bool = False):
    nonempty = nonempty or not op.info.get("identity", True)
    for shape, layout, dim, keepdim in REDUCE_CASES:
        if nonempty and _empty_reduction(shape, dim):
            continue
        if int_dims and not isinstance(dim, int):
            dim = -1 if dim is None or dim == () or not shape else dim[0]
        if need_dims and (dim is None or dim == ()):
            dim = tuple(range(len(shape)))
        yield shape, layout, dim, keepdim


def reduction(op, dtype, device, rng, nonempty=False):
    for shape, layout, dim, keepdim in _cases(op, nonempty):
        x = _input(dtype, shape, layout, rng)
        yield Sample(call_args(op, input=x, dim=dim, keepdim=keepdim))
    if any(a.name == "dtype" for a in op.schema.args):
        x = _input(dtype, (3, 4), C, rng)
        args = call_args(op, input=x, dim=1, keepdim=False, dtype=ember.float64)
        yield Sample(args, dtype=ember.float64)
    if any(a.name == "correction" for a in op.schema.args):
        x = _input(dtype, (3, 4), C, rng)
        yield Sample(call_args(op, input=x, dim=1, correction=0))


def reduction_nonempty(op, dtype, device, rng):
    return reduction(op, dtype, device, rng, nonempty=True)


def reduction_dims(op, dtype, device, rng):
    for shape, layout, dim, keepdim in _cases(op, nonempty=False, need_dims=True):
        x = _input(dtype, shape, layout, rng)
        yield Sample(call_args(op, input=x, dim=dim, keepdim=keepdim))


def reduction_one_dim(op, dtype, device, rng, optional=False):
    for shape, layout, dim, keepdim in _cases(op, nonempty=True, int_dims=True):
        x = _input(dtype, shape, layout, rng)
        yield Sample(call_args(op, input=x, dim=dim, keepdim=keepdim))
    if optional:
        for shape, keepdim in (((3, 4), False), ((2, 3, 4), True), ((), False)):
            x = _input(dtype, shape, C, rng)
            yield Sample(call_args(op, input=x, dim=None, keepdim=keepdim))


def reduction_one_dim_optional(op, dtype, device, rng):
    return reduction_one_dim(op, dtype, device, rng, optional=True)


def scan(op, dtype, device, rng):
    for shape, layout, dim, _keepdim in _cases(op, nonempty=False, int_dims=True):
        x = _input(dtype, shape, layout, rng)
        yield Sample(call_args(op, input=x, dim=dim))
    if dtype is not ember.float64:
        x = _input(dtype, (3, 4), C, rng)
        yield Sample(call_args(op, input=x, dim=0, dtype=ember.float64), dtype=ember.float64)


def norm(op, dtype, device, rng):
    cases = [c for c in REDUCE_CASES if not _empty_reduction(c[0], c[2])]
    for i, p in enumerate(NORM_ORDERS):
        for shape, layout, dim, keepdim in cases[i % 3 :: 3]:
            x = _input(dtype, shape, layout, rng)
            yield Sample(call_args(op, input=x, p=p, dim=dim, keepdim=keepdim))
