"""Meta functions: what a composite gives on ``meta`` tensors where its decomposition reads values.

Most ops need nothing here: on meta their runner derives shapes, dtypes and strides as on any
device and the kernel does nothing (dispatcher/meta.py). A few decompositions read values to
decide *how* to compute, although what they return is shaped the same whatever the values: Euclid's
loop runs until every remainder is zero (gcd), the Taylor degree follows the norm (matrix_exp),
domain checks (mvlgamma, quantile's q), the range from min and max (histc), a permutation built on
the host (lu_unpack), index sorting (scatter_reduce). For those, as PyTorch's meta registrations do
(torch/_meta_registrations.py), a rule of this table checks the arguments and gives the outputs.

``install(ops)`` puts each rule in front of its op's decomposition, so the Backend layer, autograd's
composite path and the tracer all use it on meta; the runners of ``meta.DATA_DEPENDENT``'s ops
refuse meta tensors before any value is read. Other ops are not touched (no cost on the hot path).
"""

# ruff: noqa: N803 - matrices keep their mathematical names (A, LU), as in PyTorch
from __future__ import annotations

import functools

import ember
from ember import _dtype as dt
from ember._tensor import Tensor, empty

from .kinds._common import broadcast_shapes, wrap_dim
from .kinds.matrices import check_matrix
from .meta import DATA_DEPENDENT, DEVICE_TYPE, refuse

RULES: dict = {}  # op name -> rule(op, *args), args as the decomposition gets them


def _rule(*names: str):
    def register(fn):
        for name in names:
            RULES[name] = fn
        return fn

    return register


def _new(like: Tensor, shape, dtype=None) -> Tensor:
    """A contiguous meta tensor (PyTorch's meta functions allocate ``new_empty``)."""
    return empty(tuple(shape), dtype or like._dtype, like._storage.device)


@_rule("gcd", "lcm")
def _gcd(op, a, b):
    from .optable.surface_math import _as_tensor_like

    b = _as_tensor_like(b, a)
    shape = broadcast_shapes(op.name, a._shape, b._shape)
    return _new(a, shape, ember.result_type(a, b))


@_rule("mvlgamma")
def _mvlgamma(op, input, p):
    from .optable.special import check_mvlgamma_order

    check_mvlgamma_order(p)
    dtype = input._dtype if input._dtype.is_floating_point else dt.get_default_dtype()
    return _new(input, input._shape, dtype)


@_rule("linalg_matrix_exp")
def _matrix_exp(op, A):
    check_matrix("linalg.matrix_exp", A, square=True)
    return _new(A, A._shape)


@_rule("histc")
def _histc(op, x, bins=100, min=0, max=0):
    from .optable.surface_reduce import check_histc

    check_histc(bins, min, max)
    return _new(x, (bins,))


@_rule("histogram", "histogramdd")
def _histogram(op, x, bins, range=None, weight=None, density=False):
    """Shapes from the bin counts: the edges' values need the input's."""
    from .optable.surface_histogram import bin_counts

    counts = bin_counts(x, bins, op.name)
    hist = _new(x, counts)
    edges = [_new(x, (n + 1,)) for n in counts]
    return (hist, edges[0]) if op.name == "histogram" else [hist, *edges]


@_rule("quantile", "nanquantile")
def _quantile(op, x, q, dim=None, keepdim=False, interpolation="linear"):
    """The decomposition itself, less the check that q's values lie in [0, 1]."""
    from .optable.surface_quantile import check_quantile_args, quantile_of

    check_quantile_args(op.name, x, q, interpolation)
    return quantile_of(x, q, dim, keepdim, interpolation, op.name == "nanquantile")


@_rule("scatter_reduce")
def _scatter_reduce(op, x, dim, index, src, reduce, include_self=True):
    from .optable.surface_scatter import check_scatter_reduce

    check_scatter_reduce(x, reduce)
    wrap_dim(dim, x.ndim, op.name)
    return _new(x, x._shape)


@_rule("index_reduce", "index_reduce_")
def _index_reduce(op, x, dim, index, source, reduce, include_self=True):
    from .optable.surface_index_reduce import check_index_reduce

    check_index_reduce(x, wrap_dim(dim, x.ndim, "index_reduce"), index, source, reduce)
    return x if op.mutates else _new(x, x._shape)


def _meta_permutation(pivots, m: int, LU) -> Tensor:
    return _new(LU, (*LU._shape[:-2], m, m))


@_rule("lu_unpack")
def _lu_unpack(op, LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    from .optable.linalg_solve import unpack_lu

    return unpack_lu(LU_data, LU_pivots, unpack_data, unpack_pivots, _meta_permutation)


@_rule("linalg_lu")
def _lu(op, A, pivot=True):
    from .optable.linalg_solve import lu_of

    return lu_of(A, pivot, _meta_permutation)


def _on_meta(args) -> bool:
    return any(isinstance(a, Tensor) and a._storage.device.type == DEVICE_TYPE for a in args)


def _guarded(decomposition, on_meta):
    @functools.wraps(decomposition)
    def guarded(*args):
        if _on_meta(args):
            return on_meta(*args)
        return decomposition(*args)

    return guarded


def _refusing(runner, refused):
    @functools.wraps(runner)
    def guarded(op, *args):
        if _on_meta(args):
            return refused()
        return runner(op, *args)

    return guarded


def install(ops: dict) -> None:
    """Put the rules in front of their ops' decompositions, and DATA_DEPENDENT's refusals in
    front of their ops' runners (the Backend layer, where PyTorch finds no meta kernel)."""
    for name, op in ops.items():
        if name in RULES:
            op.decomposition = _guarded(op.decomposition, functools.partial(RULES[name], op))
        elif name in DATA_DEPENDENT:
            op.runner = _refusing(op.runner, refuse(name))
