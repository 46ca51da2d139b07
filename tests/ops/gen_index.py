"""Sample generators for indexing and sorting ops: gather/scatter, index_select/index_add,
take/put_, masked ops, index_fill, nonzero, sort/topk, searchsorted.

Index tensors are int64 and in range (out-of-range indices are error tests, not samples).
Writes that could collide (scatter, put_ without accumulate) use distinct indices, so the result
does not depend on the order the kernel writes in.
"""

from __future__ import annotations

import numpy as np

import ember

from .sampling import LARGE, Arr, Sample, arr, call_args, scalar, values

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def _index(rng, high, shape, unique=False, layout=C) -> Arr:
    shape = tuple(shape)
    if unique:
        picked = rng.permutation(high)[: int(np.prod(shape))].reshape(shape)
    else:
        picked = rng.integers(0, max(high, 1), shape) if high else np.zeros(shape, np.int64)
    return Arr(picked.astype(np.int64), layout)


def _index_along(rng, x_shape, dim, size, unique) -> np.ndarray:
    """An index of x's rank with ``size`` along ``dim`` (distinct along it when ``unique``)."""
    shape = list(x_shape)
    shape[dim] = size
    rows = np.moveaxis(np.empty(shape, np.int64), dim, -1)
    for pos in np.ndindex(*rows.shape[:-1]):
        rows[pos] = (
            rng.permutation(x_shape[dim])[:size] if unique else rng.integers(0, x_shape[dim], size)
        )
    return np.moveaxis(rows, -1, dim)


def gather(op, dtype, device, rng):
    for shape, layout, dim, size in (
        ((3, 4), C, 0, 2),
        ((3, 4), T, 1, 6),
        ((2, 3, 4), N, -1, 3),
        ((5,), S, 0, 0),
        ((LARGE,), C, 0, LARGE),
    ):
        x = arr(dtype, shape, rng, layout)
        index = Arr(_index_along(rng, shape, dim % len(shape), size, unique=False))
        yield Sample((x, dim, index))


def scatter(op, dtype, device, rng):
    """scatter/scatter_add: distinct targets; scatter_add also gets colliding ones."""
    cases = [((4, 5), C, 0, 2, True), ((3, 6), T, 1, 4, True), ((2, 3, 4), N, 2, 3, True)]
    cases.append(((5,), S, 0, 0, True))
    if op.name.startswith("scatter_add"):
        cases.append(((3, 4), C, 1, 7, False))
    for shape, layout, dim, size, unique in cases:
        x = arr(dtype, shape, rng, layout)
        index = _index_along(rng, shape, dim, size, unique)
        src = arr(dtype, index.shape, rng, T if index.ndim > 1 and index.size else C)
        yield Sample((x, dim, Arr(index), src))


def index_select(op, dtype, device, rng):
    for shape, layout, dim, index in (
        ((5, 4), C, 0, _index(rng, 5, (3,))),
        ((5, 4), T, 1, _index(rng, 4, (6,))),
        ((2, 3, 4), N, -1, _index(rng, 4, (2,), layout=N)),
        ((5, 4), S, 0, _index(rng, 5, (0,))),
        ((5,), C, 0, _index(rng, 5, ())),
        ((LARGE,), C, 0, _index(rng, LARGE, (LARGE,))),
    ):
        yield Sample((arr(dtype, shape, rng, layout), dim, index))


def index_add(op, dtype, device, rng):
    alpha = scalar(dtype, rng, low=1, high=2) if dtype is not ember.bool else True
    for shape, layout, dim, count in (((5, 4), C, 0, 3), ((5, 4), T, 1, 6), ((2, 3, 4), N, 1, 0)):
        index = _index(rng, shape[dim], (count,))
        src_shape = shape[:dim] + (count,) + shape[dim + 1 :]
        source = arr(dtype, src_shape, rng)
        yield Sample((arr(dtype, shape, rng, layout), dim, index, source))
        yield Sample((arr(dtype, shape, rng, layout), dim, index, source, alpha))


def take(op, dtype, device, rng):
    for shape, layout, index_shape in (
        ((3, 4), C, (5,)),
        ((3, 4), T, (2, 3)),
        ((9,), N, ()),
        ((4, 5), S, (0,)),
        ((200, 200), T, (LARGE,)),
    ):
        index = _index(rng, int(np.prod(shape)), index_shape)
        yield Sample((arr(dtype, shape, rng, layout), index))
    negative = Arr(np.array([-1, -12, 0, 5], np.int64))
    yield Sample((arr(dtype, (3, 4), rng), negative), desc="negative indices")


def put(op, dtype, device, rng):
    for shape, layout, count, accumulate in (
        ((3, 4), C, 5, False),
        ((3, 4), T, 6, False),
        ((9,), N, 4, False),
        ((4, 5), S, 7, False),
        ((3, 4), C, 0, False),
        ((LARGE,), C, 1000, False),
    ):
        index = _index(rng, int(np.prod(shape)), (count,), unique=True)
        source = arr(dtype, (count,), rng)
        yield Sample((arr(dtype, shape, rng, layout), index, source, accumulate))
    if dtype is not ember.bool:
        repeated = Arr(np.array([0, 3, 3, 7, 0], np.int64))
        source = arr(dtype, (5,), rng, low=0, high=3)
        yield Sample((arr(dtype, (3, 4), rng, T), repeated, source, True), desc="accumulate")


def masked(op, dtype, device, rng):
    """masked_fill(x, mask, value) / masked_select(x, mask): masks broadcast to x."""
    value = scalar(dtype, rng)
    for shape, layout, mask_shape in (
        ((3, 4), C, (3, 4)),
        ((3, 4), T, (4,)),
        ((2, 3, 4), N, (3, 1)),
        ((0, 3), C, (3,)),
        ((), C, ()),
        ((LARGE,), C, (LARGE,)),
    ):
        mask = arr(ember.bool, mask_shape, rng)
        yield Sample(call_args(op, input=arr(dtype, shape, rng, layout), mask=mask, value=value))
    if any(a.name == "value" for a in op.schema.args):
        zero_dim = Arr(values(dtype, (), rng))
        yield Sample((arr(dtype, (3, 4), rng), arr(ember.bool, (3, 4), rng), zero_dim))


def index_fill(op, dtype, device, rng):
    """index_fill(x, dim, index, value): repeated and negative positions, a 0-d index, an
    empty one, a 0-d input, and a 0-d tensor value."""
    value = scalar(dtype, rng)
    for shape, layout, dim, index in (
        ((3, 4), C, 1, Arr(np.array([0, 2, 0], np.int64))),
        ((3, 4), T, 0, Arr(np.array([-1], np.int64))),
        ((2, 3, 4), N, -1, _index(rng, 4, ())),
        ((5,), S, 0, _index(rng, 5, (0,))),
        ((), C, 0, Arr(np.array([0], np.int64))),
    ):
        yield Sample((arr(dtype, shape, rng, layout), dim, index, value))
    zero_dim = Arr(values(dtype, (), rng))
    yield Sample((arr(dtype, (3, 4), rng), 0, _index(rng, 3, (2,)), zero_dim))


def nonzero(op, dtype, device, rng):
    for shape, layout in (((3, 4), C), ((3, 4), T), ((9,), N), ((2, 3, 4), S), ((0, 3), C)):
        yield Sample((arr(dtype, shape, rng, layout, zeros=0.5),))
    for v in (0, 1):
        yield Sample((Arr(np.array(v).astype(dtype.np)),))
    yield Sample((arr(dtype, (LARGE,), rng, zeros=0.5),))


def _sortable(dtype, shape, rng, layout, distinct: bool) -> Arr:
    """Distinct values when asked (so an unstable sort has one right answer), else with ties."""
    if distinct and dtype.is_floating_point:
        n = int(np.prod(shape))
        v = (rng.permutation(n) - n // 2).reshape(shape) / 4
        return Arr(v.astype(dtype.np), layout)
    return arr(dtype, shape, rng, layout)


SORT_CASES = (  # shape, layout, dim, descending
    ((7,), C, 0, False),
    ((3, 5), T, 1, True),
    ((3, 5), N, 0, False),
    ((2, 3, 4), S, -1, True),
    ((0, 3), C, 1, False),
    ((), C, 0, False),
    ((LARGE,), C, 0, True),
)


def sort(op, dtype, device, rng):
    """Unstable sorts only over distinct floats; everything else is stable (ties have an order)."""
    for shape, layout, dim, descending in SORT_CASES:
        distinct = dtype.is_floating_point and int(np.prod(shape)) < 2048
        x = _sortable(dtype, shape, rng, layout, distinct)
        yield Sample(call_args(op, input=x, dim=dim, descending=descending, stable=not distinct))


def topk(op, dtype, device, rng):
    for (shape, layout, dim, largest), k in zip(SORT_CASES, (3, 2, 3, 4, 0, 1, 10)):
        x = _sortable(dtype, shape, rng, layout, distinct=True)
        yield Sample(call_args(op, input=x, k=k, dim=dim, largest=not largest))


def searchsorted(op, dtype, device, rng):
    for seq_shape, val_shape, right in (
        ((8,), (5,), False),
        ((8,), (3, 4), True),
        ((3, 6), (3, 4), False),
        ((0,), (4,), False),
        ((LARGE,), (1000,), True),
    ):
        seq = np.sort(values(dtype, seq_shape, rng), axis=-1)
        vals = arr(dtype, val_shape, rng)
        yield Sample(call_args(op, sorted_sequence=Arr(seq), input=vals, right=right))
