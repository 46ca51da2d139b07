"""Shape ops: views, reshapes, permutations, slicing, splitting, joining, copies, padding.

Sizes that the trace kept symbolic arrive as V (computed from ``Shape`` at run time) and go
into ``Reshape``/``Expand``/``Slice``/``Split`` inputs, so the exported graph follows the input
sizes. Facts a rule must fix at export time (how many pieces ``unbind`` makes, which dims
``squeeze`` drops) come from the traced sizes, as PyTorch's exporter takes them.
"""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt

from ..builder import INT64_MAX, INT64_MIN, V


def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def _ints(value) -> list:
    """An ``int[]`` argument as a list (a lone int stands for a list of one)."""
    return [value] if isinstance(value, int) else list(value)


def reshape(g, x, sizes):
    """``Reshape``; a literal 0 in PyTorch's sizes is an empty dim, not "copy" (allowzero)."""
    allowzero = None
    if isinstance(sizes, (list, tuple)) and 0 in sizes and -1 not in sizes:
        allowzero = 1
    return g.op("Reshape", x, g.ints(sizes), allowzero=allowzero)


def flatten(g, x, start_dim=0, end_dim=-1):
    rank = x.rank
    if rank == 0:
        return reshape(g, x, [1])
    start, end = _dim(start_dim, rank), _dim(end_dim, rank)
    if start == end:
        return x
    parts = []
    if start > 0:
        parts.append(g.dims(x, 0, start))
    parts.append(g.const([-1], dt.int64))
    if end + 1 < rank:
        parts.append(g.dims(x, end + 1))
    return g.op("Reshape", x, g.op("Concat", *parts, axis=0))


def unflatten(g, x, dim, sizes):
    rank = x.rank
    dim = _dim(dim, rank)
    parts = []
    if dim > 0:
        parts.append(g.dims(x, 0, dim))
    parts.append(g.ints(sizes))
    if dim + 1 < rank:
        parts.append(g.dims(x, dim + 1))
    return g.op("Reshape", x, g.op("Concat", *parts, axis=0))


def permute(g, x, dims):
    rank = x.rank
    return g.op("Transpose", x, perm=[_dim(d, rank) for d in _ints(dims)])


def transpose(g, x, dim0, dim1):
    rank = x.rank
    if rank < 2:
        return x
    perm = list(range(rank))
    a, b = _dim(dim0, rank), _dim(dim1, rank)
    perm[a], perm[b] = perm[b], perm[a]
    return g.op("Transpose", x, perm=perm)


def t(g, x):
    return transpose(g, x, 0, 1)


def movedim(g, x, source, destination):
    rank = x.rank
    source = [_dim(d, rank) for d in ([source] if isinstance(source, int) else source)]
    dest = [_dim(d, rank) for d in ([destination] if isinstance(destination, int) else destination)]
    perm = [-1] * rank
    for s, d in zip(source, dest):
        perm[d] = s
    rest = iter(d for d in range(rank) if d not in source)
    perm = [p if p != -1 else next(rest) for p in perm]
    return g.op("Transpose", x, perm=perm)


def unsqueeze(g, x, dim):
    return g.unsqueeze(x, _dim(dim, x.rank + 1))


def squeeze(g, x, dim=None):
    """Drops the dims of size 1 at trace time (PyTorch's exporter decides the same way)."""
    rank = x.rank
    dims = range(rank) if dim is None else [dim] if isinstance(dim, int) else dim
    axes = [d for d in (_dim(d, rank) for d in dims) if rank and x.sizes[d] == 1]
    if not axes:
        return x
    return g.op("Squeeze", x, g.const(axes, dt.int64))


def expand(g, x, sizes):
    """``Expand`` broadcasts, so PyTorch's -1 ("keep this size") becomes 1."""
    if isinstance(sizes, (list, tuple)) and all(isinstance(s, int) for s in sizes):
        return g.op("Expand", x, g.const([1 if s == -1 else s for s in sizes], dt.int64))
    shape = g.ints(sizes)
    minus = g.op("Equal", shape, g.const(-1, dt.int64), dtype=dt.bool_)
    shape = g.op("Where", minus, g.const(1, dt.int64), shape)
    return g.op("Expand", x, shape)


def _slice(g, x, dim, start, end, step=1):
    start = 0 if start is None else start
    end = INT64_MAX if end is None else end
    axes = g.const([dim], dt.int64)
    return g.op("Slice", x, g.ints(start), g.ints(end), axes, g.const([step], dt.int64))


def slice_(g, x, dim=0, start=None, end=None, step=1):
    return _slice(g, x, dim, start, end, step)


def select(g, x, dim, index):
    return g.op("Gather", x, g.scalar(index, dt.int64), axis=dim)


def narrow(g, x, dim, start, length):
    if isinstance(start, int) and isinstance(length, int):
        end = start + length
    else:
        end = g.op("Add", g.scalar(start, dt.int64), g.scalar(length, dt.int64))
    return _slice(g, x, dim, start, end)


def _pieces(g, x, dim, size, count: int) -> list:
    """Split along ``dim`` into ``count`` pieces of ``size`` (the last takes what is left);
    ``size`` may be a run-time value, so the pieces follow the input."""
    if count == 1:
        return [x]
    step = g.scalar(size, dt.int64)
    head = g.op("Mul", step, g.const(count - 1, dt.int64))
    last = g.op("Sub", g.size(x, dim), head)
    sizes = g.ints([step] * (count - 1) + [last])
    return list(g.op("Split", x, sizes, axis=dim, outputs=count))


def split(g, x, split_size_or_sections, dim=0):
    sections = split_size_or_sections
    count = _unpacked(g)
    if isinstance(sections, (list, tuple)) and len(sections) != 1:
        if count == 1:
            return [x]
        return list(g.op("Split", x, g.ints(sections), axis=dim, outputs=count))
    size = sections[0] if isinstance(sections, (list, tuple)) else sections
    return _pieces(g, x, dim, size, count)


def chunk(g, x, chunks, dim=0):
    """``chunk``: pieces of ``ceil(size / chunks)``, computed from the run-time size."""
    count = _unpacked(g)
    total = g.size(x, dim)
    size = g.op("Div", g.op("Add", total, g.const(chunks - 1, dt.int64)), g.const(chunks, dt.int64))
    return _pieces(g, x, dim, size, count)


def _unpacked(g) -> int:
    """How many tensors a node returning several gave at trace time."""
    if len(g.node.outputs()) > 1:  # returned as a tuple: one output each
        return len(g.node.outputs())
    out = g.node.outputsAt(0)
    for use in out.uses():
        if use.user.kind() == "prim::ListUnpack":
            return len(use.user.outputs())
    raise g.unsupported("a list of tensors used other than by unpacking")


def unbind(g, x, dim=0):
    count = x.sizes[_dim(dim, x.rank)]
    if count == 1:
        return [squeeze(g, x, dim)]
    parts = g.op("Split", x, g.const([1] * count, dt.int64), axis=dim, outputs=count)
    axes = g.const([dim], dt.int64)
    return [g.op("Squeeze", part, axes) for part in parts]


def cat(g, tensors, dim=0):
    out = g.out_dtype()
    items = [g.cast(t, out) for t in tensors if not _empty_1d(t)] or [g.cast(tensors[0], out)]
    return items[0] if len(items) == 1 else g.op("Concat", *items, axis=dim)


def _empty_1d(t: V) -> bool:
    """PyTorch's cat skips 1-D empty tensors (legacy behaviour)."""
    return t.sizes == (0,)


def stack(g, tensors, dim=0):
    out = g.out_dtype()
    rank = tensors[0].rank + 1
    items = [g.unsqueeze(g.cast(t, out), _dim(dim, rank)) for t in tensors]
    return items[0] if len(items) == 1 else g.op("Concat", *items, axis=_dim(dim, rank))


def vstack(g, tensors):
    return cat(g, [g.unsqueeze(t, 0) if t.rank == 1 else t for t in tensors], 0)


def hstack(g, tensors):
    return cat(g, tensors, 0 if tensors[0].rank == 1 else 1)


def flip(g, x, dims):
    dims = _ints(dims)
    k = len(dims)
    axes = g.const([_dim(d, x.rank) for d in dims], dt.int64)
    starts, ends = g.const([-1] * k, dt.int64), g.const([INT64_MIN] * k, dt.int64)
    return g.op("Slice", x, starts, ends, axes, g.const([-1] * k, dt.int64))


def roll(g, x, shifts, dims=None):
    if not dims:
        flat = reshape(g, x, [-1])
        return g.op("Reshape", roll(g, flat, shifts, [0]), g.shape(x))
    for shift, dim in zip(_ints(shifts), _ints(dims)):
        size = g.size(x, dim)
        cut = g.op("Sub", size, g.op("Mod", g.const(shift, dt.int64), size, fmod=0))
        tail = _slice(g, x, dim, cut, None)
        head = _slice(g, x, dim, 0, cut)
        x = g.op("Concat", tail, head, axis=dim)
    return x


def repeat(g, x, repeats):
    repeats = _ints(repeats) if not isinstance(repeats, V) else repeats
    if isinstance(repeats, list) and len(repeats) > x.rank:
        x = g.unsqueeze(x, list(range(len(repeats) - x.rank)))
    return g.op("Tile", x, g.ints(repeats))


def tile(g, x, dims):
    dims = _ints(dims)
    if len(dims) < x.rank:
        dims = [1] * (x.rank - len(dims)) + dims
    return repeat(g, x, dims)


def _trilu(upper: int):
    def rule(g, x, diagonal=0):
        k = g.scalar(diagonal, dt.int64)
        if x.dtype is dt.bool_:  # onnxruntime's Trilu takes no bools
            masked = g.op("Trilu", g.cast(x, dt.int64), k, upper=upper)
            return g.cast(masked, dt.bool_)
        return g.op("Trilu", x, k, upper=upper)

    return rule


def to_copy(g, x, dtype=None, device=None, non_blocking=False):
    return g.cast(x, g.out_dtype())


def copy_(g, target, src, non_blocking=False):
    return g.op("Expand", g.tensor(src, target.dtype), g.shape(target))


def zero_(g, x):
    zero = g.onnx.numpy_helper.from_array(np.zeros(1, dtype=x.dtype.np))
    return g.op("ConstantOfShape", g.shape(x), value=zero)


def fill_(g, x, value):
    return g.op("Expand", g.scalar(value, x.dtype), g.shape(x))


def repeat_interleave(g, x, repeats=None, dim=None, output_size=None):
    """Each element ``repeats`` times in a row: a new axis after ``dim``, expanded, merged."""
    if repeats is None or (isinstance(repeats, V) and repeats.sizes != ()):
        raise g.unsupported("repeat_interleave with a tensor of repeats")
    if dim is None:
        x, dim = reshape(g, x, [-1]), 0
        x.sizes = (None,)
    dim = _dim(dim, x.rank)
    spread = g.unsqueeze(x, dim + 1)
    times = g.ints([repeats])
    shape = g.op("Concat", g.dims(spread, 0, dim + 1), times, g.dims(spread, dim + 2), axis=0)
    expanded = g.op("Expand", spread, shape)
    merged = [g.dims(x, 0, dim), g.const([-1], dt.int64)]
    if dim + 1 < x.rank:
        merged.append(g.dims(x, dim + 1))
    return g.op("Reshape", expanded, g.op("Concat", *merged, axis=0))


def constant_pad_nd(g, x, pad, value=0):
    """PyTorch lists (before, after) pairs from the last dim back; ONNX all befores, then all
    afters, first dim first."""
    rank = x.rank
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):
        begins[rank - 1 - i] = pad[2 * i]
        ends[rank - 1 - i] = pad[2 * i + 1]
    fill = g.tensor(value, x.dtype)
    return g.op("Pad", x, g.ints(begins + ends), fill, mode="constant")


def _identity(g, x, *_ignored):
    return x


TABLE = {
    "view": reshape,
    "reshape": reshape,
    "flatten": flatten,
    "unflatten": unflatten,
    "permute": permute,
    "transpose": transpose,
    "swapaxes": transpose,
    "swapdims": transpose,
    "t": t,
    "movedim": movedim,
    "unsqueeze": unsqueeze,
    "squeeze": squeeze,
    "expand": expand,
    "slice": slice_,
    "select": select,
    "narrow": narrow,
    "split": split,
    "chunk": chunk,
    "unbind": unbind,
    "cat": cat,
    "stack": stack,
    "vstack": vstack,
    "hstack": hstack,
    "flip": flip,
    "roll": roll,
    "repeat": repeat,
    "tile": tile,
    "tril": _trilu(0),
    "triu": _trilu(1),
    "contiguous": _identity,
    "clone": _identity,
    "detach": _identity,
    "_to_copy": to_copy,
    "copy_": copy_,
    "zero_": zero_,
    "fill_": fill_,
    "repeat_interleave": repeat_interleave,
    "constant_pad_nd": constant_pad_nd,
}
