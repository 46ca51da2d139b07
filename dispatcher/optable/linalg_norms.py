"""Vector and matrix norms of ember.linalg. vector_norm is ember's ``norm`` (its formula handles
zero norms and ties); matrix norms reduce over two dims or use singular values."""

# ruff: noqa: N803, N806 - PyTorch's argument names and matrix names (A, S)
from __future__ import annotations

import math

from ember import _dtype as dt

from ..kinds._common import OPS, wrap_dim
from ..kinds.matrices import check_tensor
from . import linalg_reference as ref
from .linalg_rows import composite

NORM_DTYPES = frozenset(dt.FLOATS)


def _check_float(name, x, dtype=None) -> None:
    check_tensor(name, x, "x")
    d = dtype or x.dtype
    if not (d.is_floating_point or d.is_complex):
        from ..kinds.matrices import SCALAR_NAMES

        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{SCALAR_NAMES.get(d.name, d.name)}"
        )


def _vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    name = "linalg.vector_norm"
    _check_float(name, x, dtype)
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str")
    if isinstance(dim, int):
        dim = (dim,)
    if x.dtype.is_complex or (dtype is not None and dtype.is_complex):
        # the norm of the magnitudes |z| (real, as PyTorch's result), differentiable through abs
        x, dtype = (x if dtype is None else x.to(dtype)).abs(), None
    if x.numel() == 0 and (ord < 0 or ord == math.inf):
        dims = range(x.ndim) if dim is None else dim
        if any(x.shape[d] == 0 for d in dims):
            raise RuntimeError(
                f"{name} cannot compute the {ord} norm on an empty tensor because the operation "
                "does not have an identity"
            )
    if dim is None or len(dim) == 0:
        flat = x.reshape(-1)
        result = OPS["norm"](flat, float(ord), [0], False, dtype)
        return result.reshape((1,) * x.ndim) if keepdim else result
    return OPS["norm"](x, float(ord), list(dim), keepdim, dtype)


def _move_to_end(A, dim):
    d0, d1 = (wrap_dim(d, A.ndim, "linalg.matrix_norm") for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return A.movedim((d0, d1), (-2, -1)), (d0, d1)


def _restore(value, dims, keepdim):
    """A result over A's other dims, given back the two reduced dims when keepdim."""
    if not keepdim:
        return value
    for d in sorted(dims):
        value = value.unsqueeze(d)
    return value


def _max_min(values, ord):
    """The largest (ord > 0) or smallest of the last dim of non-negative ``values``. PyTorch
    gives zeros outside the graph for the largest of none (an empty matrix); amin still raises."""
    if ord > 0 and values.shape[-1] == 0:
        return values.new_zeros(values.shape[:-1])
    return values.amax(-1) if ord > 0 else values.amin(-1)


def _matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    name = "linalg.matrix_norm"
    check_tensor(name, A)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    _check_float(name, A, dtype)
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {list(dim)}")
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return _vector_norm(A, 2, tuple(dim), keepdim)
    moved, dims = _move_to_end(A, dim)
    if ord in ("nuc", 2, -2):
        S = OPS["linalg_svdvals"](moved, None)
        if ord == "nuc":
            value = S.sum(-1)
        else:
            value = _max_min(S, ord)
        return _restore(value, dims, keepdim)
    if ord in (math.inf, -math.inf, 1, -1):
        # inf: the largest row sum; 1: the largest column sum (min for the negative orders).
        sums = moved.abs().sum(-1 if abs(ord) == math.inf else -2)
        value = _max_min(sums, ord)
        return _restore(value, dims, keepdim)
    raise RuntimeError(f"{name}: Order {ord} not supported.")


def _norm(A, ord=None, dim=None, keepdim=False, dtype=None):
    name = "linalg.norm"
    check_tensor(name, A)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"{name}: If dim is specified, it must be of length 1 or 2. Got {dim}")
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(
                f"{name}: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                f"{A.ndim}D."
            )
        dim = tuple(range(A.ndim))
    if dim is not None and len(dim) == 2:
        return _matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    return _vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype)


ROWS = [
    composite("linalg_vector_norm(Tensor input, Scalar ord=2, int[1]? dim=None, "
              "bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", _vector_norm,
              ref.vector_norm, "vector_norm", dtypes=NORM_DTYPES),
    composite("linalg_matrix_norm(Tensor input, Scalar ord='fro', int[] dim=[-2, -1], "
              "bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", _matrix_norm,
              ref.matrix_norm, "matrix_norm", dtypes=NORM_DTYPES),
    composite("linalg_norm(Tensor input, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, "
              "*, ScalarType? dtype=None) -> Tensor", _norm, ref.norm, "linalg_norm",
              display="linalg.", dtypes=NORM_DTYPES),
]  # fmt: skip
