"""Sample generators for ops that move data without arithmetic: views, flip/roll/repeat, cat and
friends, copies and fills.

View and shape ops take op-specific arguments, so their cases are data keyed by op name:
``(input shape, args after the input, layouts)``; each case runs in every listed layout that
fits the shape. An op of these kinds without an entry has no samples (the coverage test says so).
"""

from __future__ import annotations

import ember

from .sampling import LARGE, Arr, Sample, arr, call_args, layout_fits, scalar, values

C, T, S, N, E = "contiguous", "transposed", "sliced", "negative", "expanded"
ALL = (C, T, S, N)
CONTIG = (C,)

VIEW_CASES = {
    "view": [
        ((2, 3, 4), ((6, 4),), CONTIG),
        ((2, 3, 4), ((-1,),), CONTIG),
        ((2, 3, 4), ((2, 3, 2, 2),), ALL),
        ((2, 0, 4), ((0, 8),), CONTIG),
        ((), ((1,),), CONTIG),
        ((LARGE,), ((200, 200),), CONTIG),
    ],
    "reshape": [
        ((2, 3, 4), ((-1,),), ALL),
        ((2, 3, 4), ((4, 6),), ALL),
        ((2, 3, 4), ((1, 2, 12),), ALL),
        ((2, 0, 4), ((-1, 4),), CONTIG),
        ((), ((1, 1),), CONTIG),
        ((200, 200), ((LARGE,),), (T,)),
    ],
    "permute": [((2, 3, 4), ((2, 0, 1),), ALL), ((2, 3, 4), ((-1, 0, 1),), ALL), ((), ((),), ALL)],
    "transpose": [((2, 3, 4), (0, 2), ALL), ((2, 3, 4), (-1, 1), ALL), ((5,), (0, 0), ALL)],
    "t": [((3, 4), (), ALL), ((5,), (), ALL), ((), (), ALL)],
    "expand": [
        ((3, 1), ((3, 4),), ALL),
        ((3, 1), ((2, 3, 5),), ALL),
        ((3, 1), ((-1, 4),), ALL),
        ((), ((2, 2),), ALL),
        ((1, 0), ((3, 0),), ALL),
    ],
    "narrow": [((5, 4), (0, 1, 3), ALL), ((5, 4), (-1, 2, 0), ALL), ((5, 4), (1, -2, 2), ALL)],
    "slice": [
        ((6, 4), (0, 1, 5, 2), ALL),
        ((6, 4), (1, None, None, 3), ALL),
        ((6, 4), (0, -4, None, 1), ALL),
        ((6, 4), (0, 10, 20, 1), ALL),
    ],
    "select": [((3, 4), (0, 1), ALL), ((3, 4), (1, -1), ALL), ((2, 3, 4), (2, 0), ALL)],
    "squeeze": [
        ((2, 1, 3, 1), (), ALL),
        ((2, 1, 3, 1), (1,), ALL),
        ((2, 1, 3, 1), ((1, 3),), ALL),
        ((2, 3), (0,), ALL),
        ((), (), ALL),
    ],
    "unsqueeze": [((2, 3), (0,), ALL), ((2, 3), (-1,), ALL), ((2, 3), (1,), ALL), ((), (0,), ALL)],
    "flatten": [
        ((2, 3, 4), (), ALL),
        ((2, 3, 4), (1,), ALL),
        ((2, 3, 4), (0, 1), ALL),
        ((), (), ALL),
        ((2, 0, 3), (0, -1), ALL),
    ],
    "unflatten": [
        ((2, 12), (1, (3, 4)), ALL),
        ((2, 12), (-1, (2, -1)), ALL),
        ((6,), (0, (2, 3)), ALL),
    ],
    "diagonal": [
        ((3, 4), (), ALL),
        ((3, 4), (1,), ALL),
        ((3, 4), (-1,), ALL),
        ((2, 3, 4), (0, 1, 2), ALL),
        ((4, 3), (5,), ALL),
    ],
    "movedim": [((2, 3, 4), (0, 2), ALL), ((2, 3, 4), ((0, 1), (2, 0)), ALL)],
    "unfold": [((7,), (0, 3, 2), ALL), ((4, 6), (1, 2, 1), ALL), ((4, 6), (0, 4, 3), ALL)],
    "detach": [((2, 3), (), ALL), ((), (), ALL)],
    "swapaxes": [((2, 3, 4), (0, 2), ALL), ((2, 3), (-1, 0), ALL)],
    "swapdims": [((2, 3, 4), (0, 2), ALL), ((2, 3), (-1, 0), ALL)],
    "unbind": [((3, 4), (), ALL), ((3, 4), (1,), ALL), ((2, 0), (0,), ALL)],
    "split": [
        ((5, 4), (2,), ALL),
        ((5, 4), ((1, 3, 1),), ALL),
        ((5, 4), (3, 1), ALL),
        ((0, 4), (2,), CONTIG),
    ],
    "chunk": [
        ((5, 4), (2,), ALL),
        ((5, 4), (3, 1), ALL),
        ((6,), (4,), ALL),
        ((0, 4), (2,), CONTIG),
    ],
    # ---- shape ops (copies) ----
    "flip": [
        ((2, 3, 4), ((0,),), ALL),
        ((2, 3, 4), ((0, 2),), ALL),
        ((2, 3, 4), ((-1,),), ALL),
        ((), ((),), CONTIG),
        ((0, 3), ((1,),), CONTIG),
        ((LARGE,), ((0,),), (C, N)),
    ],
    "roll": [
        ((5,), (2,), ALL),
        ((3, 4), (1, 0), ALL),
        ((3, 4), ((1, -2), (0, 1)), ALL),
        ((3, 4), (-1,), ALL),
        ((0, 3), (1, 0), CONTIG),
    ],
    "repeat": [
        ((2, 3), ((2, 2),), ALL),
        ((3,), ((2, 3),), ALL),
        ((2, 3), ((1, 1, 2),), ALL),
        ((), ((3,),), CONTIG),
    ],
    "tile": [((2, 3), ((2,),), ALL), ((2, 3), ((2, 1, 2),), ALL)],
    "repeat_interleave": [((3,), (2,), ALL), ((2, 3), (2, 1), ALL), ((2, 3), (3,), ALL)],
}


def view(op, dtype, device, rng):
    """``VIEW_CASES[op.name]``: every case in every layout that fits its shape."""
    for shape, args, layouts in VIEW_CASES[op.name]:
        for layout in layouts:
            if layout_fits(shape, layout):
                yield Sample((arr(dtype, shape, rng, layout), *args))


# cat, stack, hstack, vstack: same-shape lists work for all four; cat also gets uneven sizes.
CAT_CASES = (
    ([((2, 3), C), ((2, 3), T), ((2, 3), N)], 0),
    ([((2, 3), S), ((2, 3), C)], 1),
    ([((2, 3), C), ((2, 3), C)], -1),
    ([((4,), C), ((4,), N)], 0),
    ([((0, 3), C), ((0, 3), C)], 0),
    ([((1,), C)], 0),
    ([((LARGE // 2 + 1,), C), ((LARGE // 2 + 1,), N)], 0),
)
CAT_ONLY_CASES = (
    ([((2, 3), C), ((4, 3), T), ((0, 3), C)], 0),
    ([((2, 1), C), ((2, 5), S)], 1),
)


def cat(op, dtype, device, rng):
    cases = CAT_CASES + (CAT_ONLY_CASES if op.name == "cat" else ())
    for pieces, dim in cases:
        tensors = [arr(dtype, shape, rng, layout) for shape, layout in pieces]
        yield Sample(call_args(op, tensors=tensors, dim=dim))


def matrix(op, dtype, device, rng):
    """tril, triu, trace: 2-D inputs, with diagonals when the op takes one."""
    diagonals = (0, 1, -1, 5) if any(a.name == "diagonal" for a in op.schema.args) else (0,)
    cases = (((3, 4), C), ((4, 3), T), ((3, 3), N), ((0, 3), C), ((1, 1), C), ((200, 200), S))
    for i, (shape, layout) in enumerate(cases):
        x = arr(dtype, shape, rng, layout)
        yield Sample(call_args(op, input=x, diagonal=diagonals[i % len(diagonals)]))


# (size, stride, storage_offset) over a contiguous 12-element input.
AS_STRIDED_CASES = (
    ((3, 4), (4, 1), 0),
    ((2, 2), (1, 2), 1),
    ((3, 3), (0, 1), 2),
    ((4,), (3,), 0),
    ((0, 2), (1, 1), 0),
    ((), (), 5),
    ((2, 3), (1, 2), None),
)


def as_strided(op, dtype, device, rng):
    for size, stride, offset in AS_STRIDED_CASES:
        yield Sample(
            call_args(
                op, input=arr(dtype, (12,), rng), size=size, stride=stride, storage_offset=offset
            )
        )


# ---- copies and fills -----------------------------------------------------------------------
COPY_CASES = (  # (dst shape, dst layout), (src shape, src layout)
    (((3, 4), C), ((3, 4), C)),
    (((3, 4), T), ((3, 4), N)),
    (((3, 4), S), ((4,), C)),
    (((2, 3), C), ((), C)),
    (((0, 3), C), ((1, 3), C)),
    (((), C), ((), C)),
    (((LARGE,), N), ((LARGE,), C)),
    (((200, 200), T), ((200, 200), C)),
)


def _castable(src_dtype, dst_dtype, rng, shape, layout) -> Arr:
    """Values any dtype holds exactly enough to cast predictably (no negatives into uint8)."""
    low = 0 if dst_dtype is ember.uint8 else -9
    return arr(src_dtype, shape, rng, layout, low=low, high=9)


def copy(op, dtype, device, rng):
    """copy_(dst, src): same dtype, then src of every other dtype cast into dst."""
    for (dshape, dlayout), (sshape, slayout) in COPY_CASES:
        dst = arr(dtype, dshape, rng, dlayout)
        yield Sample((dst, _castable(dtype, dtype, rng, sshape, slayout)))
    for src_dtype in _other_dtypes(dtype):
        dst = arr(dtype, (3, 4), rng, T)
        yield Sample((dst, _castable(src_dtype, dtype, rng, (3, 4), N)))


def to_copy(op, dtype, device, rng):
    """_to_copy(x[, dtype]): the same dtype in every layout, then into every other dtype."""
    for shape, layout in (((3, 4), C), ((3, 4), T), ((9,), N), ((), C), ((0, 2), C), ((LARGE,), S)):
        yield Sample((arr(dtype, shape, rng, layout),))
    for target in _other_dtypes(dtype):
        x = _castable(dtype, target, rng, (3, 4), T)
        yield Sample((x, target), dtype=target)


def _other_dtypes(dtype) -> list:
    all_dtypes = (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)
    all_dtypes += (ember.float16, ember.bfloat16, ember.float32, ember.float64)
    return [d for d in all_dtypes if d is not dtype]


def fill(op, dtype, device, rng):
    """fill_(x, value) / zero_(x): x in every layout; value a scalar or a 0-dim tensor."""
    for shape, layout in (((3, 4), C), ((3, 4), T), ((9,), N), ((4, 5), S), ((), C), ((0, 3), C)):
        x = arr(dtype, shape, rng, layout)
        yield Sample(call_args(op, self=x, value=scalar(dtype, rng)))
    yield Sample(call_args(op, self=arr(dtype, (LARGE,), rng), value=scalar(dtype, rng)))
    zero_dim = Arr(values(dtype, (), rng))
    yield Sample(call_args(op, self=arr(dtype, (2, 3), rng, S), value=zero_dim))
