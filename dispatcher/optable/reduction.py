"""Reductions and scans. Composites (mean, var, logsumexp, norm...) are written in ember ops."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds import reduction as run
from ..kinds._common import OPS
from ..opdef import (
    DTYPES_ALL,
    DTYPES_FLOAT,
    DTYPES_NUMERIC,
    OUT_EXACT,
    OUT_FROM_OUT,
    Kind,
    OpDef,
    Out,
    Promotion,
)

REDUCE_ARGS = "(out, x, dims): out has x's rank with the reduced dims (sorted tuple) of size 1"


def _axis(dim, ndim, empty_is_every=True):
    """numpy's axis for a dim argument: None, [] and () are every dim (numpy's None), as in
    PyTorch; with ``empty_is_every`` False (all, any) [] and () are none (numpy's ())."""
    if run.no_dims(dim):
        return None if dim is None or empty_is_every else ()
    return tuple(dim) if isinstance(dim, (tuple, list)) else dim


def _np_reduce(fn, empty_is_every=True, **extra):
    def reference(x, dim=None, keepdim=False, dtype=None):
        result = fn(x, axis=_axis(dim, x.ndim, empty_is_every), keepdims=keepdim, **extra)
        return np.asarray(result)

    return reference


def _np_all_any(fn):
    """all/any: an empty dim list reduces nothing; uint8 inputs give uint8, as in PyTorch."""
    reduce_ = _np_reduce(fn, empty_is_every=False)

    def reference(x, dim=None, keepdim=False):
        result = reduce_(x, dim, keepdim)
        return result.astype(np.uint8) if x.dtype == np.uint8 else result

    return reference


def _count(x, dims) -> int:
    return math.prod(x.shape[d] for d in dims)


# Half-precision inputs reduce in float32 (PyTorch's accumulate type) and round once at the end:
# the sum of squares of 40000 float16 values overflows float16 although their std is 2.
_HALF = (dt.float16, dt.bfloat16)


def _mean(x, dim=None, keepdim=False, dtype=None):
    target = dtype or x.dtype
    if target.category < ember.float32.category:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {target.name}"
        )
    if dtype is None and x.dtype in _HALF:
        return _mean(x.to(ember.float32), dim, keepdim).to(x.dtype)
    dims = run.reduced_dims(dim, x.ndim, "mean")
    # An empty reduction divides by zero and gives NaN, as in PyTorch.
    return ember.sum(x, dims, keepdim, dtype=dtype) / _count(x, dims)


def _var(x, dim=None, correction=1, keepdim=False):
    if x.dtype in _HALF:
        return _var(x.to(ember.float32), dim, correction, keepdim).to(x.dtype)
    dims = run.reduced_dims(dim, x.ndim, "var")
    n = _count(x, dims)
    correction = 1 if correction is None else correction
    centred = x - ember.mean(x, dims, keepdim=True)
    return ember.sum(centred * centred, dims, keepdim) / max(n - correction, 0)


def _std(x, dim=None, correction=1, keepdim=False):
    if x.dtype in _HALF:
        return _std(x.to(ember.float32), dim, correction, keepdim).to(x.dtype)
    return ember.sqrt(_var(x, dim, correction, keepdim))


def _logsumexp(x, dim, keepdim=False):
    dims = run.reduced_dims(dim, x.ndim, "logsumexp")
    if x.dtype.category != ember.float32.category:
        x = x.to(ember.get_default_dtype())
    if x.dtype in _HALF:
        return _logsumexp(x.to(ember.float32), dim, keepdim).to(x.dtype)
    if not _count(x, dims):  # no maximum to subtract; the sum of nothing is 0, its log -inf
        return ember.log(ember.sum(ember.exp(x), dims, keepdim))
    peak = ember.amax(x, dims, keepdim=True).detach()
    peak = ember.where(ember.isinf(peak), ember.zeros_like(peak), peak)
    total = ember.log(ember.sum(ember.exp(x - peak), dims, keepdim=True)) + peak
    return total if keepdim else total.squeeze(dims) if dims else total


def _norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    if isinstance(p, str) and not (p == "fro" and (dim is None or _few_dims(dim))):
        # PyTorch's torch.norm: 'nuc', and 'fro' over more than two dims, are matrix norms
        dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
        return OPS["linalg_matrix_norm"](x, p, dims, keepdim, dtype)
    if dtype is not None:
        x = x.to(dtype)
    if x.dtype.is_complex:  # the norm of the magnitudes |z|: real, as PyTorch's
        x = ember.abs(x)
    if x.dtype.category != ember.float32.category:
        raise RuntimeError(f"norm(): input dtype should be floating point, got {x.dtype.name}")
    if x.dtype in _HALF:
        return _norm(x.to(ember.float32), p, dim, keepdim).to(x.dtype)
    dims = run.reduced_dims(dim, x.ndim, "norm")
    if not x.numel() and not isinstance(p, str) and (p < 0 or p == math.inf):
        _check_empty_norm(x, p, dim, dims)
    if p in ("fro", 2, 2.0):
        return ember.sqrt(ember.sum(x * x, dims, keepdim))
    if p in (math.inf, float("inf")):
        return ember.amax(ember.abs(x), dims, keepdim)
    if p in (-math.inf, float("-inf")):
        return ember.amin(ember.abs(x), dims, keepdim)
    if p == 1:
        return ember.sum(ember.abs(x), dims, keepdim)
    if p == 0:
        return ember.sum((x != 0).to(x.dtype), dims, keepdim)
    return ember.sum(ember.abs(x) ** p, dims, keepdim) ** (1.0 / p)


def _few_dims(dim) -> bool:
    return isinstance(dim, int) or len(dim) <= 2


def _check_empty_norm(x, p, dim, dims) -> None:
    """inf and negative orders have no identity: PyTorch's vector_norm refuses to fold an empty
    dim with them."""
    if run.no_dims(dim):
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor because the "
            f"operation does not have an identity (norm of shape {list(x.shape)})"
        )
    for d in dims:
        if not x.shape[d]:
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the {p:g} norm on the dimension {d}because "
                f"this dimension is empty and the operation does not have an identity (norm of "
                f"shape {list(x.shape)})"
            )


def _np_norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    axis = _axis(dim, x.ndim)
    a = np.abs(x.astype(np.float64))
    if p in ("fro", 2, 2.0):
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
    if p == math.inf:
        return np.max(a, axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdim)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    return np.sum(a**p, axis=axis, keepdims=keepdim) ** (1.0 / p)


def _count_nonzero(x, dim=None):
    return ember.sum(x != 0, dim)


def _with_indices(fn, arg):
    def reference(x, dim, keepdim=False):
        values = fn(x, axis=dim, keepdims=keepdim)
        indices = arg(x, axis=dim, keepdims=keepdim)
        return values, indices

    return reference


def _arg_reference(fn):
    def reference(x, dim=None, keepdim=False):
        return np.asarray(fn(x, axis=dim, keepdims=keepdim))

    return reference


def reduce(
    name, ref, promotion, dtypes=DTYPES_ALL, identity=True, with_dtype=True, attrs=None, **kw
) -> OpDef:
    tail = ", *, ScalarType? dtype=None" if with_dtype else ""
    # out= computes in out's dtype where the op takes one (sum, prod); else it must match.
    kw.setdefault("out", OUT_FROM_OUT if with_dtype else OUT_EXACT)
    return OpDef(
        f"{name}(Tensor input, int[]? dim=None, bool keepdim=False{tail}) -> Tensor",
        Kind.REDUCTION,
        ref,
        promotion=promotion,
        dtypes=dtypes,
        runner=run.reduce,
        samples="reduction",
        attrs={"identity": identity, **(attrs or {})},
        kernel_args=REDUCE_ARGS,
        **kw,
    )


# all/any over dim=[] or () reduce nothing (every other reduction reduces every dim), and keep
# uint8 inputs uint8 (PyTorch's legacy byte masks).
ALL_ANY = {"empty_dims_reduce": False, "keeps_uint8": True}


def _np_scan(fn):
    """cumsum/cumprod: integers accumulate in int64; a 0-d input keeps its shape."""

    def reference(x, dim, dtype=None):
        wide = x.astype(np.int64) if x.dtype.kind in "biu" else x
        return fn(wide.reshape(x.shape or (1,)), axis=dim).reshape(x.shape)

    return reference


def _sum_ref(x, dim=None, keepdim=False, dtype=None):
    if dtype is None and x.dtype.kind in "biu":
        x = x.astype(np.int64)
    return np.asarray(np.sum(x, axis=_axis(dim, x.ndim), keepdims=keepdim))


def _prod_ref(x, dim=None, keepdim=False, dtype=None):
    if dtype is None and x.dtype.kind in "biu":
        x = x.astype(np.int64)
    return np.asarray(np.prod(x, axis=_axis(dim, x.ndim), keepdims=keepdim))


ROWS = [
    reduce("sum", _sum_ref, Promotion.BOOL_TO_LONG),
    reduce("prod", _prod_ref, Promotion.BOOL_TO_LONG),
    reduce("amax", _np_reduce(np.max), Promotion.KEEP, identity=False, with_dtype=False),
    reduce("amin", _np_reduce(np.min), Promotion.KEEP, identity=False, with_dtype=False),
    *(
        reduce(
            name,
            _np_all_any(fn),
            Promotion.ALWAYS_BOOL,
            with_dtype=False,
            differentiable=False,
            attrs=ALL_ANY,
        )
        for name, fn in (("all", np.all), ("any", np.any))
    ),
    OpDef(
        "mean(Tensor input, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
        "-> Tensor",
        Kind.REDUCTION,
        _np_reduce(np.mean),
        promotion=Promotion.FLOAT_ONLY,
        dtypes=DTYPES_FLOAT,
        decomposition=_mean,
        samples="reduction",
        out=OUT_FROM_OUT,
    ),
    OpDef(
        "var(Tensor input, int[]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> Tensor",
        Kind.REDUCTION,
        lambda x, dim=None, correction=1, keepdim=False: np.var(
            x,
            axis=_axis(dim, x.ndim),
            ddof=1 if correction is None else correction,
            keepdims=keepdim,
        ),
        dtypes=DTYPES_FLOAT,
        decomposition=_var,
        frontend=True,
        samples="reduction_nonempty",
        notes="the public var/std also take unbiased= (positional, as in PyTorch)",
    ),
    OpDef(
        "std(Tensor input, int[]? dim=None, *, Scalar? correction=1, bool keepdim=False) -> Tensor",
        Kind.REDUCTION,
        lambda x, dim=None, correction=1, keepdim=False: np.std(
            x,
            axis=_axis(dim, x.ndim),
            ddof=1 if correction is None else correction,
            keepdims=keepdim,
        ),
        dtypes=DTYPES_FLOAT,
        decomposition=_std,
        frontend=True,
        samples="reduction_nonempty",
    ),
    OpDef(
        "logsumexp(Tensor input, int[] dim, bool keepdim=False) -> Tensor",
        Kind.REDUCTION,
        lambda x, dim, keepdim=False: np.log(
            np.sum(np.exp(x), axis=_axis(dim, x.ndim), keepdims=keepdim)
        ),
        promotion=Promotion.INT_TO_FLOAT,
        dtypes=DTYPES_NUMERIC,
        decomposition=_logsumexp,
        samples="reduction_dims",
    ),
    OpDef(
        "norm(Tensor input, Scalar? p='fro', int[]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        Kind.REDUCTION,
        _np_norm,
        dtypes=DTYPES_FLOAT,
        decomposition=_norm,
        samples="norm",
        out=OUT_EXACT,
    ),
    OpDef(
        "count_nonzero(Tensor input, int[]? dim=None) -> Tensor",
        Kind.REDUCTION,
        lambda x, dim=None: np.asarray(np.count_nonzero(x, axis=_axis(dim, x.ndim))),
        promotion=Promotion.LONG,
        decomposition=_count_nonzero,
        differentiable=False,
        samples="reduction",
        out=None,
    ),
    *(
        OpDef(
            f"{name}(Tensor input, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
            Kind.REDUCTION,
            _with_indices(np_value, np_arg),
            promotion=Promotion.KEEP,
            runner=run.reduce_with_indices,
            frontend=True,
            samples="reduction_one_dim",
            out=Out("exact", "partial"),
            kernel_args="(values, indices, x, dim): both outputs have x's rank, size 1 at dim",
            notes=f"the public {name}() also covers {name}(x) (all) and {name}(x, other) "
            f"({name}imum)",
        )
        for name, np_value, np_arg in (("max", np.max, np.argmax), ("min", np.min, np.argmin))
    ),
    *(
        OpDef(
            f"{name}(Tensor input, int? dim=None, bool keepdim=False) -> Tensor",
            Kind.REDUCTION,
            _arg_reference(np_arg),
            promotion=Promotion.LONG,
            dtypes=DTYPES_NUMERIC,
            runner=run.arg_reduce,
            differentiable=False,
            samples="reduction_one_dim_optional",
            out=OUT_EXACT,
            kernel_args="(out_int64, x, dim): out has x's rank, size 1 at dim; first of ties",
        )
        for name, np_arg in (("argmax", np.argmax), ("argmin", np.argmin))
    ),
    OpDef(
        "cumsum(Tensor input, int dim, *, ScalarType? dtype=None) -> Tensor",
        Kind.SCAN,
        _np_scan(np.cumsum),
        promotion=Promotion.BOOL_TO_LONG,
        dtypes=DTYPES_NUMERIC,
        runner=run.scan,
        samples="scan",
        kernel_args="(out, x, dim): out has x's shape and the result dtype (x is cast to it)",
    ),
    OpDef(
        "cumprod(Tensor input, int dim, *, ScalarType? dtype=None) -> Tensor",
        Kind.SCAN,
        _np_scan(np.cumprod),
        promotion=Promotion.BOOL_TO_LONG,
        dtypes=DTYPES_NUMERIC,
        runner=run.scan,
        samples="scan",
        kernel_args="(out, x, dim): out has x's shape and the result dtype (x is cast to it)",
    ),
]
