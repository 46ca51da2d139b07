"""Sample generators for dispatcher/optable/surface_strided.py and surface_positions.py:
scatters through explicit strides, split copies, chunked concatenation, sum_to_size, the
out-of-place fill, nonzero_static and unravel_index."""

from __future__ import annotations

import numpy as np

from .sampling import Arr, Sample, arr, call_args

C, T, S, N = "contiguous", "transposed", "sliced", "negative"

# (input shape and layout, size, stride, storage_offset): disjoint positions, so the result
# does not depend on the order of the writes
AS_STRIDED_SCATTER_CASES = (
    (((3, 3), C), (2, 2), (1, 2), 0),
    (((3, 3), T), (2, 2), (1, 2), 1),
    (((16,), C), (2, 1, 1, 2), (1, 2, 4, 8), 0),
    (((4, 3), N), (3,), (4,), None),
    (((5,), C), (), (), 2),
    (((2, 3), C), (0, 2), (1, 1), 0),
)


def as_strided_scatter(op, dtype, device, rng):
    for (shape, layout), size, stride, offset in AS_STRIDED_SCATTER_CASES:
        x, src = arr(dtype, shape, rng, layout), arr(dtype, size, rng)
        yield Sample(
            call_args(op, input=x, src=src, size=size, stride=stride, storage_offset=offset)
        )


def split_with_sizes_copy(op, dtype, device, rng):
    for shape, layout, sizes, dim in (
        ((5, 4), C, (1, 3, 1), 0),
        ((5, 4), T, (4, 0), 1),
        ((2, 6, 3), N, (2, 4), -2),
        ((7,), S, (7,), 0),
    ):
        yield Sample(
            call_args(op, input=arr(dtype, shape, rng, layout), split_sizes=sizes, dim=dim)
        )


def chunk_cat(op, dtype, device, rng):
    for pieces, dim, chunks in (
        ((((1, 2, 3), C), ((1, 2, 3), T)), -1, 5),
        ((((3, 3, 2, 1), C), ((1, 4, 2, 2), N), ((2, 1, 3, 3), C)), 0, 2),
        ((((2, 3, 3), S), ((2, 3, 1, 2), C), ((2, 3), C)), 1, 3),
        ((((4, 6), C),), 1, 3),
    ):
        tensors = [arr(dtype, shape, rng, layout) for shape, layout in pieces]
        yield Sample(call_args(op, tensors=tensors, dim=dim, num_chunks=chunks))


def sum_to_size(op, dtype, device, rng):
    for shape, layout, size in (
        ((3, 4), C, (1, 4)),
        ((3, 4), T, (3, 1)),
        ((2, 3, 4), N, (3, 1)),
        ((2, 3, 4), S, (2, 3, 4)),
        ((3, 4), C, ()),
        ((), C, ()),
        ((0, 4), C, (4,)),
    ):
        if size == shape and not dtype.is_floating_point:
            continue  # input itself: no promotion to int64 (the row's rule is sum's)
        low_high = {} if dtype.is_floating_point else {"low": -3, "high": 3}
        x = arr(dtype, shape, rng, layout, **low_high)
        yield Sample(call_args(op, input=x, size=size))


def fill_value(op, dtype, device, rng):
    for shape, layout, value in (((3, 4), T, 1), ((5,), C, True), ((), C, 0), ((2, 0), C, 3)):
        yield Sample(call_args(op, input=arr(dtype, shape, rng, layout), value=value))


def nonzero_static(op, dtype, device, rng):
    for shape, layout, size, fill in (
        ((3, 4), T, 5, -1),
        ((3, 4), C, 20, 7),
        ((6,), N, 0, -1),
        ((), C, 2, -1),
        ((2, 0), C, 3, 0),
    ):
        yield Sample(
            call_args(
                op, input=arr(dtype, shape, rng, layout, zeros=0.5), size=size, fill_value=fill
            )
        )


def unravel_index(op, dtype, device, rng):
    for shape, indices in (
        ((2, 3), [[4, 5], [0, 1]]),
        ((5,), [3, 1, 4]),
        ((2, 3, 4), 23),
        ((1, 7), []),
    ):
        flat = Arr(np.asarray(indices, dtype.np))
        yield Sample(call_args(op, indices=flat, shape=shape))


GENERATORS = {
    "as_strided_scatter": as_strided_scatter,
    "split_with_sizes_copy": split_with_sizes_copy,
    "chunk_cat": chunk_cat,
    "sum_to_size": sum_to_size,
    "fill_value": fill_value,
    "nonzero_static": nonzero_static,
    "unravel_index": unravel_index,
}
