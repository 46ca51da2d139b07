"""Sample generators for ember.linalg's rows: well-conditioned matrices (condition numbers ~10, so
float32 results agree with the float64 references), batched and in every layout, and factors
(LU, Cholesky, LDL, Householder) computed with scipy for the ops that take them.

Values are built in float64 and stored in the sampled dtype; integer and bool dtypes (only drawn
to check that they are refused) get the same values rounded.
"""

from __future__ import annotations

import math

import numpy as np

from .sampling import Arr, Sample, call_args

C, T, S, N, X = "contiguous", "transposed", "sliced", "negative", "expanded"


def _store(values, dtype, layout=C) -> Arr:
    return Arr(np.asarray(values).astype(dtype.np), layout)


def _well_conditioned(shape, rng):
    """Random matrices plus ``n`` times the identity: diagonally dominant, cond ~ 10."""
    n = shape[-1]
    a = rng.uniform(-1, 1, shape)
    if shape[-2] == n:
        a = a + n * np.eye(n)
    return a


def _full_rank(shape, rng):
    """Rectangular matrices with singular values in [1, 3]."""
    m, n = shape[-2:]
    k = min(m, n)
    q1 = np.linalg.qr(rng.normal(size=(*shape[:-2], m, m)))[0][..., :, :k]
    q2 = np.linalg.qr(rng.normal(size=(*shape[:-2], n, n)))[0][..., :k, :]
    s = rng.uniform(1, 3, (*shape[:-2], k))
    return (q1 * s[..., None, :]) @ q2


def _spd(shape, rng):
    a = rng.uniform(-1, 1, shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def _symmetric(shape, rng):
    """Symmetric with well separated eigenvalues (eigenvectors are then defined up to sign)."""
    n = shape[-1]
    q = np.linalg.qr(rng.normal(size=shape))[0]
    w = np.arange(1, n + 1) * 1.5 - n + rng.uniform(-0.2, 0.2, (*shape[:-2], n))
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


SQUARE = (((3, 3), C), ((2, 4, 4), T), ((2, 1, 3, 3), N), ((1, 1), C), ((0, 0), C), ((2, 0, 0), C))
RECTANGULAR = (((4, 3), C), ((3, 5), T), ((2, 5, 2), S), ((3, 3), N))


def square(op, dtype, device, rng):
    for shape, layout in SQUARE:
        yield Sample((_store(_well_conditioned(shape, rng), dtype, layout),))


def positive_definite(op, dtype, device, rng):
    for shape, layout in SQUARE:
        a = _store(_spd(shape, rng), dtype, layout)
        yield Sample(call_args(op, **{op.schema.args[0].name: a}))
        if "upper" in (arg.name for arg in op.schema.args):
            yield Sample(call_args(op, **{op.schema.args[0].name: a, "upper": True}))


def symmetric(op, dtype, device, rng):
    for shape, layout in SQUARE:
        yield Sample((_store(_symmetric(shape, rng), dtype, layout),))
    if "UPLO" in (arg.name for arg in op.schema.args):
        a = _store(_symmetric((2, 3, 3), rng), dtype)
        yield Sample(call_args(op, **{op.schema.args[0].name: a, "UPLO": "U"}))


def rectangular(op, dtype, device, rng):
    for shape, layout in RECTANGULAR + (((2, 0, 3), C),):
        yield Sample((_store(_full_rank(shape, rng), dtype, layout),))


def lu_factor(op, dtype, device, rng):
    for shape, layout in SQUARE + RECTANGULAR:
        values = _well_conditioned(shape, rng) if shape[-1] == shape[-2] else _full_rank(shape, rng)
        yield Sample((_store(values, dtype, layout),))


def _lu(a):
    from scipy.linalg import lu_factor as factor

    def one(m):
        lu, piv = factor(m)
        return lu, (piv + 1).astype(np.int32)

    flat = a.reshape(-1, *a.shape[-2:])
    parts = [one(m) for m in flat]
    lu = np.stack([p[0] for p in parts]).reshape(a.shape)
    piv = np.stack([p[1] for p in parts]).reshape(*a.shape[:-2], min(a.shape[-2:]))
    return lu, piv


def lu_solve(op, dtype, device, rng):
    for batch, rhs_batch, layout in (
        ((), (), C),
        ((2,), (2,), T),
        ((2,), (3, 1), C),
        ((), (2,), N),
    ):
        lu, piv = _lu(_well_conditioned((*batch, 4, 4), rng))
        for left, adjoint in ((True, False), (True, True), (False, False), (False, True)):
            b = rng.uniform(-1, 1, (*rhs_batch, 4, 2) if left else (*rhs_batch, 2, 4))
            args = (_store(lu, dtype, layout), Arr(piv), _store(b, dtype), left, adjoint)
            yield Sample(args)


def lu_solve_old(op, dtype, device, rng):
    lu, piv = _lu(_well_conditioned((2, 3, 3), rng))
    yield Sample((_store(rng.uniform(-1, 1, (2, 3, 2)), dtype), _store(lu, dtype), Arr(piv)))


def lu_unpack(op, dtype, device, rng):
    for shape in ((3, 3), (2, 3, 5), (5, 3)):
        values = _well_conditioned(shape, rng) if shape[-1] == shape[-2] else _full_rank(shape, rng)
        lu, piv = _lu(values)
        yield Sample((_store(lu, dtype), Arr(piv)))
        yield Sample((_store(lu, dtype), Arr(piv), False, True))
        yield Sample((_store(lu, dtype), Arr(piv), True, False))


def _triangular(shape, rng, upper):
    a = _well_conditioned(shape, rng)
    return np.triu(a) if upper else np.tril(a)


def solve_triangular(op, dtype, device, rng):
    cases = (((3, 3), (3, 2), C, C), ((2, 4, 4), (2, 4, 3), T, C), ((4, 4), (2, 4, 1), C, T),
             ((2, 1, 3, 3), (3, 3, 2), N, S), ((0, 0), (0, 2), C, C))  # fmt: skip
    for a_shape, b_shape, la, lb in cases:
        for upper, left, unit in ((True, True, False), (False, True, True), (True, False, False)):
            a = _store(_well_conditioned(a_shape, rng), dtype, la)
            b_values = rng.uniform(-1, 1, b_shape)
            if not left:
                b_values = np.swapaxes(b_values, -1, -2)
            b = _store(b_values, dtype, lb if b_values.ndim >= 2 else C)
            yield Sample((a, b, upper, left, unit))


def triangular_solve_old(op, dtype, device, rng):
    for upper, transpose, unit in ((True, False, False), (False, True, True), (True, True, False)):
        a = _store(_well_conditioned((2, 3, 3), rng), dtype)
        yield Sample((_store(rng.uniform(-1, 1, (3, 2)), dtype), a, upper, transpose, unit))


def _cholesky_factor(shape, rng, upper):
    factor = np.linalg.cholesky(_spd(shape, rng))
    return np.swapaxes(factor, -1, -2) if upper else factor


def cholesky_solve(op, dtype, device, rng):
    for shape, b_shape, upper in (((3, 3), (3, 2), False), ((2, 4, 4), (4, 1), True)):
        factor = _store(_cholesky_factor(shape, rng, upper), dtype, T)
        yield Sample((_store(rng.uniform(-1, 1, b_shape), dtype), factor, upper))


def cholesky_factor(op, dtype, device, rng):
    for shape, upper in (((3, 3), False), ((2, 4, 4), True), ((0, 0), False)):
        yield Sample((_store(_cholesky_factor(shape, rng, upper), dtype), upper))


def solve(op, dtype, device, rng):
    cases = (((3, 3), (3, 2), True), ((2, 3, 3), (2, 3), True), ((2, 3, 3), (3,), True),
             ((2, 1, 4, 4), (3, 4, 2), True), ((3, 3), (2, 3), False),
             ((0, 0), (0, 2), True))  # fmt: skip
    for a_shape, b_shape, left in cases:
        a = _store(_well_conditioned(a_shape, rng), dtype, T if len(a_shape) > 2 else C)
        b = _store(rng.uniform(-1, 1, b_shape), dtype)
        yield Sample((a, b, left))


def householder(op, dtype, device, rng):
    for shape, k in (((5, 3), 2), ((2, 4, 4), 4), ((3, 2), 0)):
        a = rng.uniform(-1, 1, shape)
        tau = rng.uniform(0.5, 1.5, (*shape[:-2], k))
        yield Sample((_store(a, dtype), _store(tau, dtype)))


def svd(op, dtype, device, rng):
    """Distinct singular values, so U and V are defined up to sign (LAPACK's signs in both)."""
    names = {arg.name for arg in op.schema.args}
    for shape, layout in RECTANGULAR:
        a = _store(_full_rank(shape, rng) * np.linspace(1, 2, shape[-1]), dtype, layout)
        yield Sample(call_args(op, **{op.schema.args[0].name: a}))
        for flag in ("full_matrices", "compute_uv", "some"):
            if flag in names:
                yield Sample(call_args(op, **{op.schema.args[0].name: a, flag: False}))


def qr(op, dtype, device, rng):
    for shape, layout in RECTANGULAR:
        a = _store(_full_rank(shape, rng), dtype, layout)
        for mode in ("reduced", "complete", "r"):
            yield Sample((a, mode))


def lstsq(op, dtype, device, rng):
    for a_shape, b_shape in (((5, 3), (5, 2)), ((2, 4, 4), (2, 4, 1)), ((5, 3), (5,)),
                             ((2, 3, 5), (1, 3, 2))):  # fmt: skip
        a = _store(_full_rank(a_shape, rng), dtype)
        b = _store(rng.uniform(-1, 1, b_shape), dtype)
        for driver in ("gels", "gelsy", "gelsd", "gelss"):
            if driver == "gels" and a_shape[-2] < a_shape[-1]:
                continue  # gels solves the minimum-norm problem only through LQ; same answer
            yield Sample((a, b, None, driver))


def ldl_solve(op, dtype, device, rng):
    from scipy.linalg.lapack import dsytrf

    for shape in ((3, 3), (2, 4, 4)):
        a = _symmetric(shape, rng)
        flat = a.reshape(-1, *shape[-2:])
        parts = [dsytrf(m, lower=1) for m in flat]
        ld = np.stack([np.tril(p[0]) for p in parts]).reshape(shape)
        piv = np.stack([p[1].astype(np.int32) for p in parts]).reshape(shape[:-1])
        b = rng.uniform(-1, 1, (*shape[:-1], 2))
        yield Sample((_store(ld, dtype), Arr(piv), _store(b, dtype)))


def pinv(op, dtype, device, rng):
    for shape, layout in RECTANGULAR:
        a = _store(_full_rank(shape, rng), dtype, layout)
        yield Sample((a,))
        yield Sample((a, None, 0.5))
        yield Sample((a, 1.5, None))
    yield Sample((_store(_symmetric((2, 3, 3), rng), dtype), None, None, True))


def cond(op, dtype, device, rng):
    for p in (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1):
        yield Sample((_store(_well_conditioned((2, 3, 3), rng), dtype, T), p))


def vector_norm(op, dtype, device, rng):
    x = _store(rng.uniform(-2, 2, (3, 4, 5)), dtype, T)
    for ord, dim, keepdim in ((2, None, False), (1, (1,), True), (math.inf, (0, 2), False),
                              (-math.inf, -1, False), (0, None, True), (3.5, (2,), False),
                              (-1, 1, False)):  # fmt: skip
        yield Sample((x, ord, dim, keepdim))


# Norms through singular values need LAPACK's dtypes (PyTorch refuses float16 there too).
SVD_ORDS = ("nuc", 2, -2)


def _ords(dtype, ords):
    return [o for o in ords if dtype.itemsize >= 4 or o not in SVD_ORDS]


def matrix_norm(op, dtype, device, rng):
    a = _store(rng.uniform(-2, 2, (2, 3, 4)), dtype, S)
    for ord in _ords(dtype, ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)):
        yield Sample((a, ord))
    yield Sample((a, 1, (0, 2), True))


def linalg_norm(op, dtype, device, rng):
    a = _store(rng.uniform(-2, 2, (2, 3, 4)), dtype)
    for ord, dim in ((None, None), (None, (1, 2)), ("nuc", (0, 2)), (2, 1), (math.inf, (-1,))):
        matrix = isinstance(dim, tuple) and len(dim) == 2
        if not matrix or ord in _ords(dtype, (ord,)):
            yield Sample((a, ord, dim))
    yield Sample((_store(rng.uniform(-2, 2, (3, 4)), dtype), 1))


def _integral(dtype, shape, rng, layout=C, low=-2, high=2) -> Arr:
    values = rng.integers(low, high + 1, shape)
    return Arr(values.astype(dtype.np), layout)


def cross(op, dtype, device, rng):
    yield Sample((_integral(dtype, (4, 3), rng), _integral(dtype, (4, 3), rng, N)))
    yield Sample((_integral(dtype, (3, 2), rng, T), _integral(dtype, (3, 1), rng), 0))
    yield Sample((_integral(dtype, (2, 3, 5), rng), _integral(dtype, (1, 3, 5), rng, S), 1))


def vecdot(op, dtype, device, rng):
    yield Sample(
        (_store(rng.uniform(-1, 1, (3, 4)), dtype), _store(rng.uniform(-1, 1, (4,)), dtype))
    )
    yield Sample(
        (_store(rng.uniform(-1, 1, (3, 4)), dtype, T), _store(rng.uniform(-1, 1, (3, 4)), dtype), 0)
    )


def multi_dot(op, dtype, device, rng):
    for shapes in (((3,), (3, 4), (4, 2)), ((2, 5), (5, 3), (3, 4), (4,)), ((4,), (4,))):
        yield Sample(([_integral(dtype, s, rng) for s in shapes],))


def matrix_power(op, dtype, device, rng):
    for n in (0, 1, 2, 5):
        yield Sample((_integral(dtype, (2, 3, 3), rng, T, -1, 1), n))
    if dtype.itemsize >= 4 and dtype.is_floating_point:  # inverses need LAPACK's dtypes
        yield Sample((_store(_well_conditioned((3, 3), rng), dtype), -2))


def tensorinv(op, dtype, device, rng):
    yield Sample((_store(_well_conditioned((6, 6), rng).reshape(2, 3, 6), dtype), 2))
    yield Sample((_store(_well_conditioned((4, 4), rng).reshape(4, 2, 2), dtype), 1))


def tensorsolve(op, dtype, device, rng):
    a = _well_conditioned((6, 6), rng).reshape(6, 2, 3)
    yield Sample((_store(a, dtype), _store(rng.uniform(-1, 1, (6,)), dtype)))
    b = _well_conditioned((6, 6), rng).reshape(2, 3, 6)
    yield Sample((_store(b, dtype), _store(rng.uniform(-1, 1, (6,)), dtype), (0, 1)))


def vander(op, dtype, device, rng):
    yield Sample((_integral(dtype, (4,), rng),))
    yield Sample((_integral(dtype, (2, 3), rng, T), 5))


def diagonal(op, dtype, device, rng):
    a = _store(rng.uniform(-2, 2, (2, 3, 4)) * 4, dtype, T)
    for offset, dim1, dim2 in ((0, -2, -1), (1, 0, 2), (-1, 1, 0)):
        yield Sample((a, offset, dim1, dim2))


def tensordot(op, dtype, device, rng):
    a, b = _integral(dtype, (2, 3, 4), rng), _integral(dtype, (4, 3, 5), rng, T)
    yield Sample((a, b, [2], [0]))
    yield Sample((a, b, [1, 2], [1, 0]))
    yield Sample((a, b, [], []))


def kron(op, dtype, device, rng):
    yield Sample((_integral(dtype, (2, 3), rng), _integral(dtype, (3, 2), rng, T)))
    yield Sample((_integral(dtype, (2, 1, 3), rng), _integral(dtype, (4,), rng)))
    yield Sample((_integral(dtype, (), rng), _integral(dtype, (0, 2), rng)))


def matrix_exp(op, dtype, device, rng):
    for shape, scale in (((3, 3), 0.01), ((2, 4, 4), 0.5), ((3, 3), 2.0), ((2, 2, 2), 6.0),
                         ((1, 1), 1.0), ((0, 0), 1.0)):  # fmt: skip
        yield Sample((_store(rng.uniform(-1, 1, shape) * scale, dtype),))


GENERATORS = {
    name: globals()[name]
    for name in [
        "square", "positive_definite", "symmetric", "rectangular", "lu_factor", "lu_solve",
        "lu_solve_old", "lu_unpack", "solve_triangular", "triangular_solve_old", "cholesky_solve",
        "cholesky_factor", "solve", "householder", "svd", "qr", "lstsq", "ldl_solve", "pinv",
        "cond", "vector_norm", "matrix_norm", "linalg_norm", "cross", "vecdot", "multi_dot",
        "matrix_power", "tensorinv", "tensorsolve", "vander", "diagonal", "tensordot",
        "kron", "matrix_exp",
    ]
}  # fmt: skip
