"""Data movement of PyTorch's core surface, as compositions of views, flips, gathers and cat:
diff, rot90, fliplr/flipud, ravel, msort, atleast_Nd, tensor_split and h/v/dsplit,
take_along_dim, diag_embed/diagflat, column_stack. Autograd comes from the parts."""

from __future__ import annotations

import itertools

import numpy as np

import ember

from ..kinds._common import wrap_dim
from ..opdef import DTYPES_ALL, OUT_EXACT, OUT_INDEX, Kind, OpDef, Out
from .data import OUT_JOIN


# ---- differences and rotations -------------------------------------------------------------
def _diff(x, n=1, dim=-1, prepend=None, append=None):
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, x.ndim, "diff")
    if n == 0:  # PyTorch's: the input itself, prepend and append ignored
        return x.clone()
    given = x
    pieces = [t for t in (prepend, x, append) if t is not None]
    if len(pieces) > 1:
        x = ember.cat([_as_tensor(t, x, dim) for t in pieces], dim)
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = later != earlier if x.dtype is ember.bool else later - earlier
    return x.clone() if x is given else x  # an empty input: still a new tensor


def _as_tensor(value, like, dim):
    """prepend/append: a number becomes a one-long slice along ``dim``."""
    if isinstance(value, ember.Tensor):
        return value
    shape = list(like.shape)
    shape[dim] = 1
    return ember.full(shape, value, dtype=like.dtype, device=like.device)


def _diff_reads(x, n=1, dim=-1, prepend=None, append=None) -> tuple:
    """What PyTorch's diff writes out= from: the input for order 0 (a copy) and for one plain
    difference (two slices of it); otherwise a fresh intermediate, which out never overlaps."""
    direct = n == 0 or (n == 1 and prepend is None and append is None)
    return ((x,),) if direct else ((),)


def _np_diff(x, n=1, dim=-1, prepend=None, append=None):
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return np.diff(x, n, axis=dim, **kw)


def _rot90(x, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = (wrap_dim(d, x.ndim, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}"
        )
    k %= 4
    if k == 1:
        return ember.flip(x, [b]).transpose(a, b)
    if k == 2:
        return ember.flip(x, [a, b])
    if k == 3:
        return ember.flip(x, [a]).transpose(a, b)
    return x.clone()


def _flip_at_least(name: str, dim: int, ndim: int):
    def flip(x):
        if x.ndim < ndim:
            raise RuntimeError(f"Input must be >= {ndim}-d.")
        return ember.flip(x, [dim])

    flip.__name__ = name
    return flip


def _ravel(x):
    return x.contiguous().reshape(-1)


def _msort(x):
    return ember.sort(x, 0).values


# Shapes of 0-, 1- and 2-d inputs raised to n dims (numpy's atleast_nd rules).
_ATLEAST = {
    1: {0: lambda s: (1,)},
    2: {0: lambda s: (1, 1), 1: lambda s: (1, *s)},
    3: {0: lambda s: (1, 1, 1), 1: lambda s: (1, *s, 1), 2: lambda s: (*s, 1)},
}


def _atleast(ndim: int):
    def reshape(x):
        raise_to = _ATLEAST[ndim].get(x.ndim)
        return x if raise_to is None else x.reshape(raise_to(tuple(x.shape)))

    return reshape


# ---- splits ----------------------------------------------------------------------------------
def _tensor_split(x, indices_or_sections, dim=0):
    if x.ndim == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    dim = wrap_dim(dim, x.ndim, "tensor_split")
    length = x.shape[dim]
    bounds = _split_bounds(indices_or_sections, length)
    # slices with the bounds as given (clamped by slice), as PyTorch's pieces and their nodes
    return tuple(ember.ops.slice(x, dim, start, stop) for start, stop in itertools.pairwise(bounds))


def _split_bounds(indices_or_sections, length: int) -> list:
    """[0, cut1, ..., length]: from a section count or explicit cut indices (a tensor too)."""
    spec = indices_or_sections
    if isinstance(spec, ember.Tensor):
        if spec.ndim > 1 or spec.is_floating_point() or spec.dtype is ember.bool:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{spec.dtype.name}"
            )
        spec = int(spec.item()) if spec.ndim == 0 else [int(v) for v in spec.tolist()]
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        size, extra = divmod(length, spec)
        cuts, at = [], 0
        for i in range(spec - 1):
            at += size + (1 if i < extra else 0)
            cuts.append(at)
    else:
        cuts = list(spec)  # as given: slice wraps and clamps them, as in PyTorch
    return [0, *cuts, length]


def _np_tensor_split(x, indices_or_sections, dim=0):
    spec = indices_or_sections
    spec = spec.tolist() if isinstance(spec, np.ndarray) else spec
    return tuple(np.array_split(x, spec, axis=dim))


def _directional_split(name: str, dim: int, ndim: int):
    def split(x, indices_or_sections):
        if x.ndim < ndim:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {ndim} dimension, but got a tensor "
                f"with {x.ndim} dimensions!"
            )
        along = 0 if name == "hsplit" and x.ndim == 1 else dim
        if isinstance(indices_or_sections, int) and x.shape[along] % indices_or_sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {along}, but the size of the "
                f"dimension {x.shape[along]} is not divisible by the split_size "
                f"{indices_or_sections}!"
            )
        return _tensor_split(x, indices_or_sections, along)

    split.__name__ = name
    return split


# ---- gathers and diagonals --------------------------------------------------------------------
def _take_along_dim(x, indices, dim=None):
    if indices.is_floating_point() or indices.dtype is ember.bool:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got {indices.dtype.name}"
        )
    indices = indices.to(ember.int64)
    if dim is None:
        flat = x.reshape(-1)
        return ember.gather(flat, 0, _wrapped(indices.reshape(-1), flat.shape[0]))
    if x.ndim != indices.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {x.ndim} dimensions for input, and {indices.ndim} dimensions "
            "for indices"
        )
    dim = wrap_dim(dim, x.ndim, "take_along_dim")
    x_shape, i_shape = list(x.shape), list(indices.shape)
    x_shape[dim] = i_shape[dim] = 1
    common = list(ember.broadcast_shapes(tuple(x_shape), tuple(i_shape)))
    x_shape, i_shape = list(common), list(common)
    x_shape[dim], i_shape[dim] = x.shape[dim], indices.shape[dim]
    indices = _wrapped(indices, x.shape[dim])
    return ember.gather(x.expand(x_shape), dim, indices.expand(i_shape))


def _wrapped(indices, size: int):
    """Negative indices count from the end (take_along_dim takes them; gather does not)."""
    return ember.where(indices < 0, indices + size, indices)


def _np_take_along_dim(x, indices, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), indices.reshape(-1) % max(x.size, 1), 0)
    indices = np.where(indices < 0, indices + x.shape[dim], indices)
    x_shape, i_shape = list(x.shape), list(indices.shape)
    x_shape[dim] = i_shape[dim] = 1
    common = np.broadcast_shapes(tuple(x_shape), tuple(i_shape))
    x_shape, i_shape = list(common), list(common)
    x_shape[dim], i_shape[dim] = x.shape[dim], indices.shape[dim]
    return np.take_along_axis(np.broadcast_to(x, x_shape), np.broadcast_to(indices, i_shape), dim)


def _diag_embed(x, offset=0, dim1=-2, dim2=-1):
    ndim = x.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim, "diag_embed"), wrap_dim(dim2, ndim, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] if x.ndim else 1
    size = n + abs(offset)
    padded = x if x.ndim else x.reshape(1)
    if offset:
        zeros = ember.zeros((*padded.shape[:-1], abs(offset)), dtype=x.dtype, device=x.device)
        padded = ember.cat([padded, zeros], -1)
    rows = ember.arange(size, device=x.device).reshape(size, 1)
    cols = ember.arange(size, device=x.device).reshape(1, size)
    # entry i sits at (i, i + offset) for offset >= 0, at (i - offset, i) below the diagonal
    mask = cols == rows + offset
    values = padded.unsqueeze(-1) if offset >= 0 else padded.unsqueeze(-2)
    zero = ember.zeros((), dtype=x.dtype, device=x.device)
    square = ember.where(mask, values, zero)
    return _place_last_two(square, d1, d2)


def _place_last_two(square, d1: int, d2: int):
    """Moves the last two dims of ``square`` to d1 and d2 (the row dim to the smaller)."""
    if d1 > d2:
        square, d1, d2 = square.transpose(-2, -1), d2, d1
    return square.movedim((-2, -1), (d1, d2))


def _np_diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] if x.ndim else 1
    size = n + abs(offset)
    out = np.zeros(x.shape[:-1] + (size, size), x.dtype)
    i = np.arange(n)
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = x if x.ndim else x.reshape(1)
    ndim = x.ndim + 1
    d1, d2 = dim1 % ndim, dim2 % ndim
    if d1 > d2:
        out, d1, d2 = np.swapaxes(out, -2, -1), d2, d1
    return np.moveaxis(out, (-2, -1), (d1, d2))


def _diagflat(x, offset=0):
    return ember.diag(x.contiguous().reshape(-1), offset)


def _np_diagflat(x, offset=0):
    return np.diagflat(x, offset)


def _column_stack(tensors):
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    columns = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors]
    return ember.hstack(columns)


def _np_column_stack(tensors):
    return np.column_stack(tensors)


def _shape_row(schema, ref, decomposition, samples, **kw) -> OpDef:
    kw.setdefault("out", None)
    return OpDef(
        schema,
        Kind.SHAPE,
        ref,
        dtypes=DTYPES_ALL,
        decomposition=decomposition,
        samples=samples,
        **kw,
    )


ROWS = [
    _shape_row(
        "diff(Tensor input, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) "
        "-> Tensor",
        _np_diff,
        _diff,
        "diff",
        out=Out("cast", "partial", reads=_diff_reads),
    ),
    _shape_row(
        "rot90(Tensor input, int k=1, int[] dims=[0,1]) -> Tensor",
        lambda x, k=1, dims=(0, 1): np.rot90(x, k, tuple(dims)),
        _rot90,
        "cases",
    ),
    _shape_row(
        "fliplr(Tensor input) -> Tensor", np.fliplr, _flip_at_least("fliplr", 1, 2), "cases"
    ),
    _shape_row(
        "flipud(Tensor input) -> Tensor", np.flipud, _flip_at_least("flipud", 0, 1), "cases"
    ),
    _shape_row("ravel(Tensor input) -> Tensor", np.ravel, _ravel, "cases"),
    _shape_row(
        "msort(Tensor input) -> Tensor",
        lambda x: np.sort(x, 0, kind="stable"),
        _msort,
        "cases",
        out=OUT_EXACT,
    ),
    *(
        _shape_row(f"atleast_{n}d(Tensor input) -> Tensor", ref, _atleast(n), "cases")
        for n, ref in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d))
    ),
    _shape_row(
        "tensor_split(Tensor input, int[] indices_or_sections, int dim=0) -> Tensor[]",
        _np_tensor_split,
        _tensor_split,
        "cases",
    ),
    *(
        _shape_row(
            f"{name}(Tensor input, int[] indices_or_sections) -> Tensor[]",
            lambda x, s, fn=fn: tuple(fn(x, s.tolist() if isinstance(s, np.ndarray) else s)),
            _directional_split(name, dim, ndim),
            "cases",
        )
        for name, dim, ndim, fn in (
            ("hsplit", 1, 1, np.hsplit),
            ("vsplit", 0, 2, np.vsplit),
            ("dsplit", 2, 3, np.dsplit),
        )
    ),
    _shape_row(
        "take_along_dim(Tensor input, Tensor indices, int? dim=None) -> Tensor",
        _np_take_along_dim,
        _take_along_dim,
        "take_along_dim",
        out=OUT_INDEX,  # a gather: out may share no memory with the input
    ),
    _shape_row(
        "diag_embed(Tensor input, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
        _np_diag_embed,
        _diag_embed,
        "cases",
    ),
    _shape_row("diagflat(Tensor input, int offset=0) -> Tensor", _np_diagflat, _diagflat, "cases"),
    _shape_row(
        "column_stack(Tensor[] tensors) -> Tensor",
        _np_column_stack,
        _column_stack,
        "cat",
        method=False,
        out=OUT_JOIN,
    ),
]


# ---- grids and blocks ---------------------------------------------------------------------------
def _meshgrid(tensors, indexing=None):
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D"
            )
    sizes = [t.numel() for t in tensors]
    places = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:  # the first two axes trade places
        places[0], places[1] = 1, 0
        sizes[0], sizes[1] = sizes[1], sizes[0]
    grids = []
    for t, place in zip(tensors, places):
        shape = [1] * len(tensors)
        shape[place] = -1
        grids.append(t.reshape(shape).expand(sizes))
    return tuple(grids)


def _np_meshgrid(tensors, indexing=None):
    return tuple(np.meshgrid(*tensors, indexing=indexing or "ij"))


def _cartesian_prod(tensors):
    tensors = list(tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = _meshgrid(tensors, "ij")
    return ember.stack([g.reshape(-1) for g in grids], 1)


def _np_cartesian_prod(tensors):
    if len(tensors) == 1:
        return tensors[0]
    grids = np.meshgrid(*tensors, indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], 1)


def _as_block(t):
    return t.reshape(1, -1) if t.ndim < 2 else t


def _block_diag(tensors):
    blocks = [_as_block(t) for t in tensors]
    for i, b in enumerate(blocks):
        if b.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                f"{b.ndim} dimensions"
            )
    if not blocks:
        return ember.empty((1, 0))
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = ember.promote_types(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        right = width - left - b.shape[1]
        pad = [ember.zeros((b.shape[0], n), dtype=dtype, device=b.device) for n in (left, right)]
        rows.append(ember.cat([pad[0], b.to(dtype), pad[1]], 1))
        left += b.shape[1]
    return ember.cat(rows, 0)


def _np_block_diag(tensors):
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    dtype = np.result_type(*blocks)
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)), dtype)
    r = c = 0
    for b in blocks:
        out[r : r + b.shape[0], c : c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


ROWS += [
    _shape_row(
        "meshgrid(Tensor[] tensors, *, str? indexing=None) -> Tensor[]",
        _np_meshgrid,
        _meshgrid,
        "vectors",
        method=False,
    ),
    _shape_row(
        "cartesian_prod(Tensor[] tensors) -> Tensor",
        _np_cartesian_prod,
        _cartesian_prod,
        "vectors",
        method=False,
    ),
    _shape_row(
        "block_diag(Tensor[] tensors) -> Tensor",
        _np_block_diag,
        _block_diag,
        "vectors",
        method=False,
    ),
]
