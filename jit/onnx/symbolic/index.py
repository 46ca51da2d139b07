"""Indexing: gathers, scatters, masks, sorting and top-k."""

from __future__ import annotations

from ember import _dtype as dt


def _index(g, index):
    return g.cast(index, dt.int64)


def index_select(g, x, dim, index):
    index = _index(g, index)
    if index.sizes == ():
        index = g.unsqueeze(index, 0)
    return g.op("Gather", x, index, axis=dim)


def gather(g, x, dim, index):
    return g.op("GatherElements", x, _index(g, index), axis=dim)


def _source(g, src, index, dtype):
    """A Python value given as ``src`` fills the index's shape."""
    if isinstance(src, (int, float, bool)):
        return g.op("Expand", g.const(src, dtype), g.shape(index))
    return g.cast(src, dtype)


def scatter(g, x, dim, index, src):
    index = _index(g, index)
    return g.op("ScatterElements", x, index, _source(g, src, index, x.dtype), axis=dim)


def scatter_add(g, x, dim, index, src):
    index = _index(g, index)
    src = _source(g, src, index, x.dtype)
    return g.op("ScatterElements", x, index, src, axis=dim, reduction="add")


def index_add(g, x, dim, index, source, alpha=1):
    """Scatter-add along ``dim`` with ``index`` broadcast over the source's other dims."""
    rank = source.rank
    dim = dim + rank if dim < 0 else dim
    shape = [1] * rank
    shape[dim] = -1
    spread = g.op(
        "Expand", g.op("Reshape", _index(g, index), g.const(shape, dt.int64)), g.shape(source)
    )
    source = g.cast(source, x.dtype)
    if alpha != 1:
        source = g.op("Mul", source, g.const(alpha, x.dtype))
    return g.op("ScatterElements", x, spread, source, axis=dim, reduction="add")


def take(g, x, index):
    flat = g.op("Reshape", x, g.const([-1], dt.int64))
    return g.op("Gather", flat, _index(g, index), axis=0)


def masked_fill(g, x, mask, value):
    return g.op("Where", g.cast(mask, dt.bool_), g.scalar(value, x.dtype), x)


def masked_select(g, x, mask):
    mask = g.cast(mask, dt.bool_)
    shape = g.shape(g.op("Where", mask, x, x))
    flat_x = g.op("Reshape", g.op("Expand", x, shape), g.const([-1], dt.int64))
    flat_mask = g.op("Reshape", g.op("Expand", mask, shape), g.const([-1], dt.int64))
    return g.op("Compress", flat_x, flat_mask, axis=0)


def nonzero(g, x):
    return g.op("Transpose", g.op("NonZero", x, dtype=dt.int64), perm=[1, 0])


def topk(g, x, k, dim=-1, largest=True, sorted=True):
    values, indices = g.op(
        "TopK", x, g.ints(k), axis=dim, largest=int(largest), sorted=int(sorted), outputs=2
    )
    indices.dtype = dt.int64
    return values, indices


def sort(g, x, dim=-1, descending=False, stable=False):
    """``TopK`` over the whole dim; ties keep their order (ONNX: lower index first)."""
    return topk(g, x, g.size(x, dim), dim, descending, True)


def argsort(g, x, dim=-1, descending=False, stable=False):
    return sort(g, x, dim, descending)[1]


TABLE = {
    "index_select": index_select,
    "gather": gather,
    "scatter": scatter,
    "scatter_add": scatter_add,
    "index_add": index_add,
    "take": take,
    "masked_fill": masked_fill,
    "masked_select": masked_select,
    "nonzero": nonzero,
    "topk": topk,
    "sort": sort,
    "argsort": argsort,
}
