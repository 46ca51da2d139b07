"""Sample generators for the rows of PyTorch's core surface (dispatcher/optable/surface_*.py):
argument patterns the family generators do not have (same-dtype pairs, k and q arguments,
index and count inputs)."""

from __future__ import annotations

import numpy as np

import ember

from . import gen_elementwise as ew
from . import gen_linalg as la
from . import gen_reduction as red
from .sampling import LARGE, Arr, Sample, arr, call_args, integral_floats, layout_fits

C, T, S, N = "contiguous", "transposed", "sliced", "negative"


def tensor_first(op, dtype, device, rng):
    """The binary samples whose first operand is a tensor (PyTorch's clamp_min, gcd... take
    no Python number there)."""
    for sample in ew.binary(op, dtype, device, rng):
        if isinstance(sample.args[0], Arr):
            yield sample


def float_power(op, dtype, device, rng):
    """Results are float64 whatever the inputs."""
    for sample in ew.binary(op, dtype, device, rng):
        yield Sample(sample.args, dtype=ember.float64)


def same_dtype_pair(op, dtype, device, rng):
    """heaviside, isclose: two tensors of one dtype (PyTorch refuses mixed dtypes)."""
    for case in ew.BINARY_CASES:
        yield Sample(tuple(arr(dtype, shape, rng, layout) for shape, layout in case))
    if dtype.is_floating_point:
        a = arr(dtype, (4, 5), rng)
        close = Arr((a.values * (1 + 1e-6)).astype(dtype.np))
        yield Sample(call_args(op, input=a, other=close, values=close), desc="nearly equal")


def small_ints(op, dtype, device, rng):
    """lcm: operands small enough that the least common multiple fits int8."""
    spec = {"low": -3, "high": 4} if dtype.is_signed else {"low": 0, "high": 5}
    for case in ew.BINARY_CASES:
        yield Sample(tuple(arr(dtype, shape, rng, layout, **spec) for shape, layout in case))
    yield Sample((arr(dtype, (3, 4), rng, **spec), 2))


def ldexp(op, dtype, device, rng):
    """ldexp(x, e): integer exponents of either sign."""
    for case in ew.BINARY_CASES[:-2]:
        (sx, lx), (se, le) = case
        yield Sample((arr(dtype, sx, rng, lx), arr(ember.int64, se, rng, le, low=-5, high=5)))


def _vector(dtype, shape, rng, layout=C):
    return la._operand(dtype, shape, rng, layout)


def addmv(op, dtype, device, rng):
    cases = ((((3, 4), T), ((4,), C), (3,)), (((0, 4), C), ((4,), N), (1,)))
    cases += ((((200, 200), C), ((200,), S), (200,)),)
    yield from _scaled(dtype, rng, cases)


def addr(op, dtype, device, rng):
    cases = ((((3,), C), ((4,), N), (3, 4)), (((0,), C), ((4,), C), (1,)))
    cases += ((((5,), S), ((1,), C), (5, 1)),)
    yield from _scaled(dtype, rng, cases)


def addbmm(op, dtype, device, rng):
    cases = ((((2, 3, 4), C), ((2, 4, 5), T), (3, 5)), (((0, 3, 4), C), ((0, 4, 5), C), (1, 5)))
    cases += ((((3, 64, 64), C), ((3, 64, 64), N), (64, 64)),)
    yield from _scaled(dtype, rng, cases)


def _scaled(dtype, rng, cases):
    """``input`` broadcast to the product, with beta/alpha (0 and fractions for floats)."""
    scale = (0.5, 1.5) if dtype.is_floating_point else (2, 3)
    if dtype is ember.bool:
        scale = (True, False)
    for (sa, la_), (sb, lb), c_shape in cases:
        a, b = _vector(dtype, sa, rng, la_), _vector(dtype, sb, rng, lb)
        c = _vector(dtype, c_shape, rng)
        yield Sample((c, a, b))
        yield Sample((c, a, b, scale[0], scale[1]))
        yield Sample((c, a, b, 0, scale[1]), desc="beta=0")


def inner(op, dtype, device, rng):
    cases = ((((4,), C), ((4,), N)), (((2, 3, 4), C), ((5, 4), T)), (((), C), ((3, 2), C)))
    cases += ((((0, 4), C), ((3, 4), S)),)
    for (sa, la_), (sb, lb) in cases:
        yield Sample((_vector(dtype, sa, rng, la_), _vector(dtype, sb, rng, lb)))


def kron(op, dtype, device, rng):
    cases = ((((2, 3), C), ((3, 2), T)), (((2,), C), ((2, 2, 2), N)), (((), C), ((3,), C)))
    cases += ((((0, 2), C), ((2, 3), C)),)
    for (sa, la_), (sb, lb) in cases:
        yield Sample((arr(dtype, sa, rng, la_), arr(dtype, sb, rng, lb)))


# ---- reductions ------------------------------------------------------------------------------
def aminmax(op, dtype, device, rng):
    for shape, layout, dim, keepdim in red._cases(op, nonempty=True, int_dims=True):
        yield Sample(
            call_args(op, input=red._input(dtype, shape, layout, rng), dim=dim, keepdim=keepdim)
        )
    yield Sample(call_args(op, input=red._input(dtype, (3, 4), T, rng)))
    yield Sample(call_args(op, input=red._input(dtype, (3, 4), C, rng), keepdim=True))


def reduction_one_dim_nonempty(op, dtype, device, rng):
    """median, mode: one dim, never an empty one; few distinct values, so ties happen."""
    for shape, layout, dim, keepdim in red._cases(op, nonempty=True, int_dims=True):
        if 0 in shape:
            continue
        x = arr(dtype, shape, rng, layout, low=-3, high=3)
        yield Sample(call_args(op, input=x, dim=dim, keepdim=keepdim))
    if dtype.is_floating_point and op.name != "mode":
        x = arr(dtype, (3, 5), rng)
        x.values[0, 1] = x.values[2, 0] = x.values[2, 3] = np.nan
        yield Sample(call_args(op, input=x, dim=1, keepdim=False), desc="NaNs")


def kthvalue(op, dtype, device, rng):
    for shape, layout, dim, keepdim in red._cases(op, nonempty=True, int_dims=True):
        if 0 in shape or not shape:
            continue
        x = red._input(dtype, shape, layout, rng)
        k = 1 + int(rng.integers(shape[dim]))
        yield Sample(call_args(op, input=x, k=k, dim=dim, keepdim=keepdim))
    yield Sample(call_args(op, input=arr(dtype, (), rng), k=1))


def quantile(op, dtype, device, rng):
    q_dtype = dtype.np if dtype.is_floating_point else np.float32
    q_values = Arr(np.array([0.0, 0.3, 0.5, 1.0], dtype=q_dtype))
    cases = (((5,), C, None, 0.3), ((3, 4), T, 1, q_values), ((2, 3, 4), N, 0, 0.75))
    cases += (((4, 6), S, -1, Arr(np.array(0.5, dtype=q_dtype))), ((), C, None, 0.5))
    for shape, layout, dim, q in cases:
        for keepdim in (False, True):
            x = arr(dtype, shape, rng, layout)
            yield Sample(call_args(op, input=x, q=q, dim=dim, keepdim=keepdim))
    for method in ("lower", "higher", "midpoint", "nearest"):
        x = arr(dtype, (3, 5), rng)
        yield Sample(call_args(op, input=x, q=q_values, dim=1, interpolation=method))
    if dtype.is_floating_point:
        x = arr(dtype, (3, 5), rng)
        x.values[0, 1] = x.values[2, :] = np.nan
        yield Sample(call_args(op, input=x, q=q_values, dim=1), desc="NaNs")


def scan_extreme(op, dtype, device, rng):
    """cummax, cummin, logcumsumexp: one dim; ties, and NaNs for floats."""
    for shape, layout, dim, _keepdim in red._cases(op, nonempty=False, int_dims=True):
        x = arr(dtype, shape, rng, layout, low=-3, high=3)
        yield Sample(call_args(op, input=x, dim=dim))
    if dtype.is_floating_point:
        x = arr(dtype, (3, 6), rng)
        x.values[0, 2] = x.values[1, 0] = x.values[2, 5] = np.nan
        x.values[0, 4] = np.inf
        yield Sample(call_args(op, input=x, dim=1), desc="NaN and inf")


def histc(op, dtype, device, rng):
    for shape, layout in (((20,), C), ((4, 5), T), ((0,), C), ((LARGE,), C)):
        x = arr(dtype, shape, rng, layout)
        yield Sample(call_args(op, input=x))
        yield Sample(call_args(op, input=x, bins=7, min=-2, max=3))


def bincount(op, dtype, device, rng):
    high = 9 if dtype is not ember.int8 else 7
    for size, minlength in ((12, 0), (12, 20), (0, 0), (0, 3), (LARGE, 0)):
        x = arr(dtype, (size,), rng, low=0, high=high)
        yield Sample(call_args(op, input=x, minlength=minlength))
        # whole numbers: sums of 40000 of them are exact in float32, in any order
        weights = Arr(integral_floats(ember.float32, (size,), rng))
        yield Sample(
            call_args(op, input=x, weights=weights, minlength=minlength), dtype=ember.float32
        )


# ---- data movement (surface_shape.py): (input shape, args after the input, layouts) -----------
ALL = (C, T, S, N)
SHAPE_CASES = {
    "rot90": [((3, 4), (), ALL), ((2, 3, 4), (2, (1, 2)), ALL), ((3, 4), (-1, (1, 0)), ALL)]
    + [((3, 4), (3,), ALL), ((0, 2), (4,), (C,))],
    "fliplr": [((3, 4), (), ALL), ((2, 3, 4), (), ALL), ((0, 2), (), (C,))],
    "flipud": [((3, 4), (), ALL), ((5,), (), ALL), ((LARGE,), (), (C,))],
    "ravel": [((3, 4), (), ALL), ((), (), (C,)), ((2, 0, 3), (), (C,))],
    "msort": [((5, 3), (), ALL), ((4,), (), ALL), ((0, 2), (), (C,))],
    "atleast_1d": [((), (), (C,)), ((3,), (), ALL), ((2, 3), (), ALL)],
    "atleast_2d": [((), (), (C,)), ((3,), (), ALL), ((2, 3), (), ALL), ((2, 3, 4), (), (C,))],
    "atleast_3d": [((), (), (C,)), ((3,), (), ALL), ((2, 3), (), ALL), ((2, 3, 4), (), ALL)],
    "tensor_split": [
        ((7, 3), (3,), ALL),
        ((3, 7), (4, 1), ALL),
        ((7,), ((1, 4, 10),), ALL),
        ((2, 6), ((-2, 1), -1), ALL),
        ((0, 3), (2,), (C,)),
    ],
    "hsplit": [((4, 6), (3,), ALL), ((6,), (2,), ALL), ((3, 5), ((1, 3),), ALL)],
    "vsplit": [((6, 4), (2,), ALL), ((5, 3), ((2, 4),), ALL)],
    "dsplit": [((2, 3, 4), (2,), ALL), ((2, 3, 5), ((1, 3),), ALL)],
    "diag_embed": [
        ((3,), (), ALL),
        ((2, 3), (1,), ALL),
        ((2, 3), (-2, 0, 2), ALL),
        ((2, 3, 4), (0, -1, 0), ALL),
        ((0, 2), (), (C,)),
    ],
    "diagflat": [((3,), (), ALL), ((2, 3), (1,), ALL), ((2, 2), (-2,), ALL), ((), (), (C,))],
}


def cases(op, dtype, device, rng):
    """``SHAPE_CASES[op.name]``: each case in every layout that fits its shape."""
    for shape, args, layouts in SHAPE_CASES[op.name]:
        for layout in layouts:
            if layout_fits(shape, layout):
                yield Sample((arr(dtype, shape, rng, layout), *args))


def diff(op, dtype, device, rng):
    for shape, layout, n, dim in (((5,), C, 1, -1), ((3, 6), T, 2, 1), ((4, 3), N, 1, 0)):
        yield Sample((arr(dtype, shape, rng, layout), n, dim))
    x = arr(dtype, (3, 4), rng, S)
    yield Sample((x, 1, 1, arr(dtype, (3, 2), rng), arr(dtype, (3, 1), rng, T)))
    yield Sample((arr(dtype, (4,), rng), 3, 0, arr(dtype, (2,), rng)), desc="prepend")
    yield Sample((arr(dtype, (4, 0), rng), 1, 0), desc="empty")
    yield Sample((arr(dtype, (3,), rng), 0, 0), desc="n=0")


def take_along_dim(op, dtype, device, rng):
    for shape, layout, dim, i_shape in (
        ((3, 4), C, 1, (3, 2)),
        ((3, 4), T, 0, (5, 1)),
        ((2, 3, 4), N, -1, (1, 3, 6)),
        ((3, 4), S, None, (7,)),
    ):
        x = arr(dtype, shape, rng, layout)
        bound = shape[dim] if dim is not None else int(np.prod(shape))
        index = Arr(rng.integers(0, bound, size=i_shape).astype(np.int64))
        yield Sample((x, index, dim))


def vectors(op, dtype, device, rng):
    """meshgrid, cartesian_prod, block_diag: lists of 0-d and 1-d tensors (2-d for block_diag)."""
    cases = [[((3,), C), ((4,), N)], [((2,), S), ((), C), ((3,), C)], [((5,), C)]]
    cases.append([((0,), C), ((2,), C)])
    if op.name == "block_diag":
        cases.append([((2, 3), T), ((1, 1), C), ((3,), C)])
    for pieces in cases:
        tensors = [arr(dtype, shape, rng, layout) for shape, layout in pieces]
        if op.name == "meshgrid":
            for indexing in ("ij", "xy"):
                yield Sample(call_args(op, tensors=tensors, indexing=indexing))
        else:
            yield Sample(call_args(op, tensors=tensors))


def cov(op, dtype, device, rng):
    for shape, layout in (((3, 5), C), ((4, 6), T), ((7,), C), ((2, 1), C), ((), C)):
        x = arr(dtype, shape, rng, layout)
        yield Sample(call_args(op, input=x))
        if op.name == "cov" and len(shape) == 2 and shape[1] > 2:
            n = shape[1]
            fw = Arr(rng.integers(1, 4, size=(n,)).astype(np.int64))
            aw = arr(ember.float64 if dtype is ember.float64 else ember.float32, (n,), rng)
            aw = Arr(np.abs(aw.values) + 0.1)
            yield Sample(call_args(op, input=x, correction=0, fweights=fw))
            if dtype.is_floating_point:
                aw = Arr(aw.values.astype(dtype.np))
                yield Sample(call_args(op, input=x, correction=2, fweights=fw, aweights=aw))


def cdist(op, dtype, device, rng):
    for a, b, p in (
        (((3, 4), C), ((5, 4), T), 2.0),
        (((2, 3, 4), C), ((2, 2, 4), N), 1.0),
        (((3, 2), S), ((4, 2), C), 0.0),
        (((3, 2), C), ((4, 2), C), float("inf")),
        (((3, 2), C), ((0, 2), C), 3.0),
    ):
        x1, x2 = arr(dtype, a[0], rng, a[1]), arr(dtype, b[0], rng, b[1])
        yield Sample(call_args(op, x1=x1, x2=x2, p=p))


def dist(op, dtype, device, rng):
    for a, b, p in (
        ((3, 4), (3, 4), 2),
        ((3, 4), (4,), 1),
        ((2, 3), (2, 3), 0),
        ((5,), (5,), float("inf")),
        ((2, 3), (3,), 3.5),
    ):
        yield Sample(
            call_args(
                op, input=arr(dtype, a, rng, T if len(a) > 1 else C), other=arr(dtype, b, rng), p=p
            )
        )


def scatter_reduce(op, dtype, device, rng):
    """Colliding targets, an index shorter than src, each reduction with and without self."""
    from .gen_index import _index_along

    cases = (((4, 5), C, 0, 3), ((3, 6), T, 1, 8), ((2, 3, 4), N, 2, 5), ((5,), S, 0, 0))
    for i, (shape, layout, dim, size) in enumerate(cases):
        x = arr(dtype, shape, rng, layout)
        index = _index_along(rng, shape, dim, size, unique=False)
        src_shape = tuple(n + 1 for n in index.shape)  # only the index's corner of src is used
        src = arr(dtype, src_shape, rng)
        for reduce in ("sum", "mean", "amax", "amin", "prod"):
            if reduce == "mean" and dtype is ember.bool:  # PyTorch has no bool mean
                continue
            include_self = (i + len(reduce)) % 2 == 0
            yield Sample((x, dim, Arr(index), src, reduce, include_self))


def copy_of_view(op, dtype, device, rng):
    """``<view>_copy``: the view's own samples."""
    from ember.dispatcher.optable import OPS

    from .samples import GENERATORS as ALL
    from .samples import generator_name

    view = OPS[op.name.removesuffix("_copy")]
    yield from ALL[generator_name(view)](view, dtype, device, rng)


GENERATORS = {
    "copy_of_view": copy_of_view,
    "scatter_reduce": scatter_reduce,
    "vectors": vectors,
    "cov": cov,
    "cdist": cdist,
    "dist": dist,
    "cases": cases,
    "diff": diff,
    "take_along_dim": take_along_dim,
    "tensor_first": tensor_first,
    "float_power": float_power,
    "same_dtype_pair": same_dtype_pair,
    "small_ints": small_ints,
    "ldexp": ldexp,
    "addmv": addmv,
    "addr": addr,
    "addbmm": addbmm,
    "inner": inner,
    "kron": kron,
    "aminmax": aminmax,
    "reduction_one_dim_nonempty": reduction_one_dim_nonempty,
    "kthvalue": kthvalue,
    "quantile": quantile,
    "scan_extreme": scan_extreme,
    "histc": histc,
    "bincount": bincount,
}
