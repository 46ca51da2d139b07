"""Scatters into views and index copies of PyTorch's core surface: select_scatter,
slice_scatter, diagonal_scatter, index_copy, and dstack. Each is PyTorch's own decomposition:
a clone of the input whose view is overwritten (``copy_``), so autograd records the copy into
the slice (CopySlices) and every device runs it."""

from __future__ import annotations

import numbers

import numpy as np

import ember

from ..kinds._common import wrap_dim
from ..opdef import DTYPES_ALL, DTYPES_FLOAT, DTYPES_NUMERIC, OUT_EXACT, Kind, OpDef, Promotion
from .data import OUT_INTO_COPY, OUT_JOIN


# ---- scatters into a view -------------------------------------------------------------------
def _scatter_into(x, src, view):
    """``x`` with ``view(x)`` replaced by src (cast to x's dtype), after PyTorch's shape check."""
    out = x.clone()
    part = view(out)
    if tuple(src.shape) != tuple(part.shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(part.shape)}"
        )
    part.copy_(src)
    return out


def _select_scatter(x, src, dim, index):
    return _scatter_into(x, src, lambda t: t.select(dim, index))


def _slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    return _scatter_into(x, src, lambda t: _slice(t, dim, start, end, step))


def _slice(t, dim, start, end, step):
    dim = wrap_dim(dim, t.ndim, "slice_scatter")
    at = [slice(None)] * t.ndim
    at[dim] = slice(start, end, step)
    return t[tuple(at)]


def _diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(x, src, lambda t: t.diagonal(offset, dim1, dim2))


def _np_scatter_into(view):
    def reference(x, src, *args):
        out = np.array(x, copy=True)
        view(out, src, *args)
        return out

    return reference


def _np_select(t, src, dim, index):
    at = [slice(None)] * t.ndim
    at[dim] = index
    t[tuple(at)] = src


def _np_slice(t, src, dim=0, start=None, end=None, step=1):
    at = [slice(None)] * t.ndim
    at[dim] = slice(start, end, step)
    t[tuple(at)] = src


def _np_diagonal(t, src, offset=0, dim1=0, dim2=1):
    moved = np.moveaxis(t, (dim1, dim2), (-2, -1))  # a view: writes reach t
    rows, cols = moved.shape[-2:]
    length = max(min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols), 0)
    moved[..., np.arange(length) + max(-offset, 0), np.arange(length) + max(offset, 0)] = src


# ---- index_copy ------------------------------------------------------------------------------
def _check_index_copy(x, dim, index, source) -> None:
    if index.dtype is not ember.int64:
        raise RuntimeError(
            "index_copy_(): Expected a long tensor for index, but got "
            f"{ember_scalar_name(index.dtype)}"
        )
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if source.dtype is not x.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{ember_scalar_name(x.dtype)} and (source) {ember_scalar_name(source.dtype)}"
        )
    count = index.numel()
    along = source.shape[dim] if source.ndim else 1
    if count != along:
        raise IndexError(
            f"index_copy_(): Number of indices ({count}) should be equal to source.size(dim) "
            f"({along})"
        )
    _check_slices(x, dim, source)
    size = x.shape[dim] if x.ndim else 1
    if count and index.device.type != "meta":
        low, high = int(index.min().item()), int(index.max().item())
        if low < 0 or high >= size:
            bad = high if high >= size else low
            raise IndexError(
                f"index_copy_(): index {bad} is out of bounds for dimension {dim} with size {size}"
            )


def _check_slices(x, dim, source) -> None:
    if x.ndim != source.ndim and x.numel() and source.numel():
        if max(x.ndim, 1) == max(source.ndim, 1):
            return
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their dimensionality "
            f"must match. Source dimensionality ({source.ndim}), destination dimensionality "
            f"({x.ndim})"
        )
    for d in range(x.ndim):
        if d != dim and x.shape[d] != source.shape[d]:
            raise RuntimeError(
                "index_copy_(): Source/destination tensor must have same slice shapes. "
                f"Destination slice shape: {x.shape[d]} at dimension {d} and source slice "
                f"shape: {source.shape[d]} at dimension {d}."
            )


def ember_scalar_name(dtype) -> str:
    from ember import _dtype as dt

    return dt.SCALAR_NAMES[dtype]


def _index_copy(x, dim, index, source):
    dim = wrap_dim(dim, x.ndim, "index_copy")
    _check_index_copy(x, dim, index, source)
    if x.ndim == 0:
        return source.reshape(()).clone() if index.numel() else x.clone()
    out = x.clone()
    out.movedim(dim, 0)[index.reshape(-1)] = source.movedim(dim, 0)
    return out


def _np_index_copy(x, dim, index, source):
    out = np.array(x, copy=True)
    if not x.ndim:
        return np.array(source, x.dtype).reshape(()) if np.size(index) else out
    np.moveaxis(out, dim, 0)[np.reshape(index, -1)] = np.moveaxis(source, dim, 0)
    return out


# ---- dstack ----------------------------------------------------------------------------------
def _dstack(tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return ember.cat(ember.atleast_3d(tensors), 2)


# ---- membership and buckets ------------------------------------------------------------------
def _isin(elements, test_elements, assume_unique=False, invert=False):
    for t in (elements, test_elements):
        if isinstance(t, ember.Tensor) and t.dtype is ember.bool:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    if not isinstance(elements, ember.Tensor) and not isinstance(test_elements, ember.Tensor):
        raise TypeError("isin(): expected a Tensor for elements or test_elements, got two numbers")
    elements = _isin_operand(elements, test_elements)
    test_elements = _isin_operand(test_elements, elements)
    pairs = elements.reshape(-1, 1) == test_elements.reshape(1, -1)
    found = pairs.any(1).reshape(elements.shape)
    return ember.logical_not(found) if invert else found


def _isin_operand(value, other):
    """A tensor, or a number as a 0-d tensor (PyTorch's Scalar overloads); a list is refused
    (Op.__call__ turns this TypeError into PyTorch's message naming the argument)."""
    if isinstance(value, ember.Tensor):
        return value
    if not isinstance(value, numbers.Number):
        raise TypeError(f"isin(): '{type(value).__name__}' is not a Tensor or a number")
    device = other.device if isinstance(other, ember.Tensor) else None
    return ember.tensor(value, device=device)


def _np_isin(elements, test_elements, assume_unique=False, invert=False):
    return np.isin(elements, test_elements, invert=invert)


def _bucketize(x, boundaries, out_int32=False, right=False):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return ember.searchsorted(boundaries, x, out_int32=out_int32, right=right)


def _np_bucketize(x, boundaries, out_int32=False, right=False):
    found = np.searchsorted(boundaries, x, side="right" if right else "left")
    return np.asarray(found, np.int32 if out_int32 else np.int64)


# ---- renorm ------------------------------------------------------------------------------------
def _check_renorm(x, p, dim, maxnorm) -> None:
    if float(p) <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if float(maxnorm) < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    if x.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")


def _renorm(x, p, dim, maxnorm):
    _check_renorm(x, p, dim, maxnorm)
    dim = wrap_dim(dim, x.ndim, "renorm")
    others = [d for d in range(x.ndim) if d != dim]
    # half and bfloat16 norms accumulate in float32, as PyTorch's
    wide = ember.float32 if x.dtype in (ember.float16, ember.bfloat16) else None
    magnitude = ember.abs(x) if x.is_complex() else x
    norm = ember.linalg.vector_norm(magnitude, float(p), others, True, dtype=wide)
    factor = ember.where(norm > maxnorm, maxnorm / (norm + 1e-7), ember.ones_like(norm))
    return x * factor.to(x.dtype)


def _np_renorm(x, p, dim, maxnorm):
    flat = np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    norm = np.linalg.norm(flat, float(p), axis=1).reshape(
        [-1 if d == dim % x.ndim else 1 for d in range(x.ndim)]
    )
    factor = np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return (x * factor).astype(x.dtype)


ROWS = [
    OpDef(
        "renorm(Tensor input, Scalar p, int dim, Scalar maxnorm) -> Tensor",
        Kind.NN,
        _np_renorm,
        dtypes=DTYPES_FLOAT,
        decomposition=_renorm,
        samples="renorm",
        inplace=True,
        out=OUT_INTO_COPY,
        notes="each slice along dim scaled down to norm maxnorm (PyTorch's 1e-7 guard)",
    ),
    OpDef(
        "isin(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
        "bool invert=False) -> Tensor",
        Kind.SORT,
        _np_isin,
        promotion=Promotion.ALWAYS_BOOL,
        dtypes=DTYPES_NUMERIC,
        differentiable=False,
        decomposition=_isin,
        method=False,
        samples="isin",
        out=OUT_EXACT,
        notes="every element against every test element: PyTorch's small-input path",
    ),
    OpDef(
        "bucketize(Tensor input, Tensor boundaries, *, bool out_int32=False, bool right=False) "
        "-> Tensor",
        Kind.SORT,
        _np_bucketize,
        promotion=Promotion.LONG,
        dtypes=DTYPES_NUMERIC,
        differentiable=False,
        decomposition=_bucketize,
        method=False,
        samples="bucketize",
        out=OUT_EXACT,
        notes="searchsorted(boundaries, input), as PyTorch",
    ),
    OpDef(
        "select_scatter(Tensor input, Tensor src, int dim, int index) -> Tensor",
        Kind.SHAPE,
        _np_scatter_into(_np_select),
        dtypes=DTYPES_ALL,
        decomposition=_select_scatter,
        samples="select_scatter",
        out=None,
    ),
    OpDef(
        "slice_scatter(Tensor input, Tensor src, int dim=0, int? start=None, int? end=None, "
        "int step=1) -> Tensor",
        Kind.SHAPE,
        _np_scatter_into(_np_slice),
        decomposition=_slice_scatter,
        samples="slice_scatter",
        out=OUT_EXACT,
    ),
    OpDef(
        "diagonal_scatter(Tensor input, Tensor src, int offset=0, int dim1=0, int dim2=1) "
        "-> Tensor",
        Kind.SHAPE,
        _np_scatter_into(_np_diagonal),
        decomposition=_diagonal_scatter,
        samples="diagonal_scatter",
        out=None,
    ),
    OpDef(
        "index_copy(Tensor input, int dim, Tensor index, Tensor source) -> Tensor",
        Kind.INDEX,
        _np_index_copy,
        decomposition=_index_copy,
        samples="index_copy",
        inplace=True,
        out=OUT_INTO_COPY,
        notes="duplicate indices: one of the sources wins, as in PyTorch",
    ),
    OpDef(
        "dstack(Tensor[] tensors) -> Tensor",
        Kind.SHAPE,
        np.dstack,
        decomposition=_dstack,
        method=False,
        samples="cat",
        out=OUT_JOIN,
    ),
]
