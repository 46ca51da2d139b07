"""Sample generators for matrix products (mm, bmm, matmul, dot, mv, addmm, baddbmm, einsum) and
diag. Values are small whole numbers for long inner dimensions, so that any accumulation order
gives the exact result and integer products do not overflow."""

from __future__ import annotations

import ember

from .sampling import Arr, Sample, arr, scalar

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def _operand(dtype, shape, rng, layout=C) -> Arr:
    if dtype.is_floating_point and max(shape, default=0) < 64:
        return arr(dtype, shape, rng, layout, low=-2.0, high=2.0)
    low = -2 if dtype.is_signed else 0
    return Arr(rng.integers(low, 3, shape).astype(dtype.np), layout)


def _pairs(dtype, rng, cases):
    for (sa, la), (sb, lb) in cases:
        yield _operand(dtype, sa, rng, la), _operand(dtype, sb, rng, lb)


MM_CASES = (
    (((3, 4), C), ((4, 5), C)),
    (((3, 4), T), ((4, 5), N)),
    (((3, 4), S), ((4, 5), T)),
    (((1, 1), C), ((1, 1), C)),
    (((0, 4), C), ((4, 5), C)),
    (((3, 0), C), ((0, 5), C)),
    (((200, 200), C), ((200, 200), T)),
)
BMM_CASES = (
    (((2, 3, 4), C), ((2, 4, 5), C)),
    (((2, 3, 4), T), ((2, 4, 5), N)),
    (((0, 3, 4), C), ((0, 4, 5), C)),
    (((2, 3, 0), C), ((2, 0, 5), S)),
    (((4, 100, 100), C), ((4, 100, 100), T)),
)
MATMUL_CASES = (
    (((4,), C), ((4,), N)),
    (((3, 4), T), ((4,), C)),
    (((4,), C), ((4, 5), T)),
    (((2, 3, 4), N), ((4, 5), C)),
    (((2, 1, 3, 4), C), ((3, 4, 5), T)),
    (((3, 4), C), ((2, 4, 5), C)),
    (((200, 200), C), ((200, 200), C)),
)
DOT_CASES = ((((5,), C), ((5,), N)), (((0,), C), ((0,), C)), (((1,), S), ((1,), C)))
MV_CASES = ((((3, 4), T), ((4,), C)), (((0, 4), C), ((4,), N)), (((200, 200), C), ((200,), S)))


def _products(cases):
    """A generator of (a, b) samples over ``cases`` of shapes and layouts."""

    def generate(op, dtype, device, rng):
        for a, b in _pairs(dtype, rng, cases):
            yield Sample((a, b))

    return generate


mm = _products(MM_CASES)
bmm = _products(BMM_CASES)
matmul = _products(MATMUL_CASES)
dot = _products(DOT_CASES)
mv = _products(MV_CASES)


def _scaled(op, dtype, rng, c_shapes, cases):
    """addmm/baddbmm: input broadcast to the product's shape, with and without beta/alpha."""
    beta, alpha = scalar(dtype, rng, low=-2, high=2), scalar(dtype, rng, low=-2, high=2)
    for c_shape, (a, b) in zip(c_shapes, _pairs(dtype, rng, cases)):
        c = _operand(dtype, c_shape, rng)
        yield Sample((c, a, b))
        yield Sample((c, a, b, beta))
        yield Sample((c, a, b, beta, alpha))
        yield Sample((_operand(dtype, (1,), rng), a, b, 0, alpha), desc="beta=0")


def addmm(op, dtype, device, rng):
    return _scaled(
        op, dtype, rng, [(3, 5), (5,), (1, 1), (1, 1), (0, 5), (3, 5), (200, 200)], MM_CASES
    )


def baddbmm(op, dtype, device, rng):
    shapes = [(2, 3, 5), (3, 5), (0, 3, 5), (2, 3, 5), (100,)]
    return _scaled(op, dtype, rng, shapes, BMM_CASES)


EINSUM_CASES = (
    ("ij,jk->ik", [((3, 4), C), ((4, 5), T)]),
    ("ij->ji", [((3, 4), N)]),
    ("ii->i", [((4, 4), C)]),
    ("bij,bjk->bik", [((2, 3, 4), C), ((2, 4, 5), S)]),
    ("i,i->", [((5,), C), ((5,), C)]),
    ("ij->", [((3, 4), T)]),
    ("ij,ij->ij", [((3, 4), C), ((3, 4), N)]),
    ("ij,jk,kl->il", [((2, 3), C), ((3, 4), C), ((4, 2), C)]),
    ("i,j->ij", [((3,), C), ((4,), C)]),
)


def einsum(op, dtype, device, rng):
    """Equations that only sum one operand reduce like sum(): integers give int64."""
    for equation, operands in EINSUM_CASES:
        tensors = [_operand(dtype, shape, rng, layout) for shape, layout in operands]
        lhs, out = equation.split("->")
        sums = len(operands) == 1 and set(lhs) - set(out)
        yield Sample(
            (equation, tensors), dtype=ember.int64 if sums and not dtype.is_floating_point else None
        )


def diag(op, dtype, device, rng):
    for shape, layout, diagonal in (
        ((4,), C, 0),
        ((4,), N, 1),
        ((4,), C, -2),
        ((3, 4), T, 0),
        ((3, 4), C, 1),
        ((3, 4), S, -1),
        ((0,), C, 0),
        ((200, 200), T, 3),
    ):
        yield Sample((arr(dtype, shape, rng, layout), diagonal))
