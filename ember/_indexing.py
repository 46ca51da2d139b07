"""``Tensor.__getitem__`` / ``__setitem__`` with numpy's rules.

Basic indices (ints, slices, None, ...) become views. Advanced indices (integer or boolean tensors,
lists) are broadcast together and turned into one linear index over the indexed dims: reading is
``index_select`` on those dims folded into one; writing is ``put_`` into a permuted view, so the
write lands in the original storage. Both are ops with gradients, so indexing is differentiable.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _dtype as dt
from ._tensor import Tensor
from .autograd.grad_mode import is_grad_enabled
from .autograd.graph_names import present, written_in
from .autograd.node import gradient_edge
from .dispatcher.kinds._common import broadcast_shapes
from .dispatcher.kinds._limits import check_scalar_fits
from .dispatcher.optable import OPS
from .dispatcher.overlap import check_none

_SEQUENCES = (Tensor, np.ndarray, list, tuple)
_INDEX_DTYPES = (dt.int64, dt.int32, dt.uint8, dt.bool_)  # PyTorch's long, int, byte, bool


def _as_index_tensor(item, device) -> Tensor:
    """An index item as a tensor: tensors stay where they are (on the CPU or on ``device``, as
    PyTorch allows), sequences become tensors on ``device``: bool or uint8 ones are masks,
    anything else is read as int64, floats truncated (PyTorch's indexing_tensor_from_data)."""
    from ._factories import tensor

    if isinstance(item, Tensor):
        if item._dtype not in _INDEX_DTYPES:
            raise IndexError(
                "tensors used as indices must be long, int, byte or bool tensors (got a "
                f"{item._dtype.name} tensor of shape {list(item._shape)})"
            )
        where = item._storage.device
        if where is not device and where.type != "cpu":
            raise RuntimeError(
                f"indices should be either on cpu or on the same device as the indexed tensor "
                f"({device}); got an index on {where}"
            )
        return item
    if not isinstance(item, _SEQUENCES):
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long, int, byte or bool "
            f"tensors are valid indices (got {type(item).__name__})"
        )
    array = np.asarray(item)
    if array.dtype.kind not in "bu" or array.dtype.itemsize != 1:
        if array.size and array.dtype.kind not in "iuf":
            raise TypeError(
                f"index: a sequence of {array.dtype} cannot be interpreted as integer indices"
            )
        array = array.astype(np.int64)
    return tensor(array, device=device)


def _normalize(index) -> tuple:
    if not isinstance(index, tuple):
        index = (index,)
    return index


def _expand_ellipsis(index: tuple, ndim: int) -> list:
    consumed = 0
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, bool):
            continue
        if isinstance(item, Tensor) and item.dtype is dt.bool_:
            consumed += max(item.ndim, 1) if item.ndim else 0
        elif isinstance(item, np.ndarray) and item.dtype == np.bool_:
            consumed += item.ndim
        else:
            consumed += 1
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    seen = False
    for item in index:
        if item is Ellipsis:
            if seen:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen = True
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(item)
    if not seen:
        out.extend([slice(None)] * (ndim - consumed))
    return out


def _basic(t: Tensor, index) -> tuple[Tensor, list]:
    """Apply basic indices as views; return the view and [(dim, index tensor or mask)] still to
    apply (a mask covers as many dims as it has, from ``dim``)."""
    from ._factories import tensor

    items = _expand_ellipsis(_normalize(index), t.ndim)
    view, dim, advanced = t, 0, []
    source = 0  # dims of t consumed so far, the current item's included (for messages)
    for item in items:
        source += 0 if item is None or isinstance(item, bool) else 1
        if item is None:
            view = OPS["unsqueeze"](view, dim)
            dim += 1
        elif isinstance(item, bool):
            view = OPS["unsqueeze"](view, dim)
            if not item:
                view = OPS["narrow"](view, dim, 0, 0)
            dim += 1
        elif isinstance(item, slice):
            if item != slice(None):
                step = 1 if item.step is None else int(item.step)
                if step < 0:  # zero: the slice op raises "slice step cannot be zero"
                    raise ValueError("step must be greater than zero")
                view = OPS["slice"](view, dim, item.start, item.stop, step)
            dim += 1
        elif isinstance(item, int) or _integer_scalar(item):
            position, size = int(item), view.shape[dim]
            if not -size <= position < size:
                raise IndexError(
                    f"index {position} is out of bounds for dimension {source - 1} with size {size}"
                )
            view = OPS["select"](view, dim, position)
        else:
            index_tensor = _as_index_tensor(item, view.device)
            if index_tensor.dtype is dt.bool_ or index_tensor.dtype is dt.uint8:
                source += index_tensor.ndim - 1  # a mask consumes one dim of t per dim of its own
                if index_tensor.ndim == 0:  # PyTorch: a size-1 dim indexed by [0] or by []
                    view = OPS["unsqueeze"](view, dim)
                    index_tensor = tensor([0] if index_tensor.item() else [], dtype=dt.int64)
            advanced.append((dim, index_tensor))
            dim += index_tensor.ndim if _is_mask(index_tensor) else 1
    # PyTorch applies every basic item before it looks at the masks' shapes (later items only
    # change dims after a mask's, so its recorded dims still hold).
    for at, index_tensor in advanced:
        if _is_mask(index_tensor):
            _check_mask_shape(index_tensor, view, at)
    return view, advanced


def _integer_scalar(item) -> bool:
    """Whether ``item`` indexes as an int: a number with ``__index__``, or, as in PyTorch, a
    0-dim integer tensor (not a mask), read as its value. A tensor keeps its index under
    tracing and vmap (its value varies) and on the meta device (it has none)."""
    if isinstance(item, np.ndarray):
        return False
    if not isinstance(item, Tensor):
        return hasattr(item, "__index__")
    if type(item) is not Tensor or item._shape or _is_mask(item):
        return False
    if item._dtype.is_floating_point or item._dtype.is_complex:
        return False
    from ember.jit.tracer import is_tracing

    return item._storage.device.type != "meta" and not is_tracing()


def _extremes(index: Tensor) -> tuple[int, int]:
    """The smallest and largest index; under vmap, over every sample's (the physical tensor:
    the bounds check needs numbers, which a batched tensor refuses to give)."""
    from ember.autograd.batched import unwrap_all

    values = unwrap_all(index)[0]
    return int(values.min().item()), int(values.max().item())


def _is_mask(index: Tensor) -> bool:
    return index._dtype is dt.bool_ or index._dtype is dt.uint8


def _check_mask_shape(mask: Tensor, view: Tensor, dim: int) -> None:
    for j, size in enumerate(mask.shape):
        if size != view.shape[dim + j]:
            raise IndexError(
                f"The shape of the mask {list(mask.shape)} at index {j} does not match "
                f"the shape of the indexed tensor {list(view.shape)} at index {dim + j}"
            )


def _columns(view: Tensor, advanced: list) -> list:
    """``[(dim, int index on view's device)]``: each mask becomes the index columns of its
    nonzero positions (found where the mask is, then moved, as PyTorch does)."""
    out = []
    for dim, index in advanced:
        if _is_mask(index):
            if index._dtype is dt.uint8:
                warnings.warn(
                    "indexing with dtype ember.uint8 is now deprecated, please use a dtype "
                    "ember.bool instead.",
                    UserWarning,
                    stacklevel=4,
                )
            columns = OPS["nonzero"](index.to(dt.bool_)).unbind(1)
            out.extend((dim + i, c.to(view.device)) for i, c in enumerate(columns))
        else:
            out.append((dim, index.to(view.device)))
    return out


def _linear_index(view: Tensor, advanced: list, check: bool = True):
    """Permute the advanced dims of ``view`` to the front; one int64 index over them (wrapped,
    bounds-checked) with the broadcast shape of the index tensors. ``check=False`` leaves one
    index as it is, for a kernel that wraps and checks it itself."""
    dims = [d for d, _ in advanced]
    rest = [d for d in range(view.ndim) if d not in dims]
    permuted = OPS["permute"](view, dims + rest)
    shape = broadcast_shapes("index", *(tuple(i.shape) for _, i in advanced))
    linear = None
    for d, index in advanced:
        size = view.shape[d]
        index = index.to(dt.int64)
        if check and index.numel() and index.device.type != "meta":  # meta: shapes, not values
            low, high = _extremes(index)
            if low < -size or high >= size:
                bad = high if high >= size else low
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
            if low < 0:
                index = OPS["where"](index < 0, index + size, index)
        linear = index if linear is None else linear * size + index
    linear = linear.expand(shape) if tuple(linear.shape) != tuple(shape) else linear
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    return permuted, linear, tuple(shape), len(dims), (dims[0] if adjacent else 0)


def getitem(self: Tensor, index):
    if isinstance(index, int) and not isinstance(index, bool):
        return OPS["select"](self, 0, index)
    view, advanced = _basic(self, index)
    if not advanced:
        if view is self:  # x[...] and x[:] are new views, as in PyTorch
            return _whole(self, index)
        return view
    permuted, linear, shape, count, place = _linear_index(view, _columns(view, advanced))
    rest = tuple(permuted.shape[count:])
    folded = permuted.reshape((math.prod(permuted.shape[:count]),) + rest)
    picked = OPS["index_select"](folded, 0, linear.reshape(-1))
    result = picked.reshape(shape + rest)
    if place:
        nb = len(shape)
        order = list(range(nb, nb + place)) + list(range(nb)) + list(range(nb + place, result.ndim))
        result = OPS["permute"](result, order)
    # one node over the basic view, as PyTorch's index op (its indices one per dim of the view)
    return present(result, "IndexBackward0", view, saved={"indices": _saved_indices(advanced)})


def _saved_indices(advanced: list) -> tuple:
    """PyTorch's ``indices`` of the index op: one entry per indexed dim of the view (a mask
    one entry for all the dims it covers), None where a dim is taken whole."""
    indices, covered = [], 0
    for dim, index_tensor in advanced:
        indices.extend([None] * (dim - covered - len(indices)))
        indices.append(index_tensor)
        covered += index_tensor.ndim - 1 if _is_mask(index_tensor) else 0
    return tuple(indices)


def _whole(self: Tensor, index) -> Tensor:
    """``x[:]`` is PyTorch's slice of dim 0; ``x[...]`` (and ``x[()]``) its alias."""
    if self.ndim and any(isinstance(i, slice) for i in _normalize(index)):
        return OPS["slice"](self, 0, None, None, 1)
    out = OPS["as_strided"](self, self.shape, self.stride(), self.storage_offset())
    return present(out, "AliasBackward0", self)


def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value`` as PyTorch: basic indices copy into the view (casting the value);
    advanced ones put the value, which must have self's dtype (a Python number or a list is
    made one), leading size-1 dims dropped. One mask with a one-element CPU value is
    ``masked_fill_`` (which casts), as PyTorch's index_put_ does."""
    from ._factories import tensor

    view, advanced = _basic(self, index)
    if not isinstance(value, Tensor):
        if isinstance(value, (int, float)):  # PyTorch's checked conversion of a number
            check_scalar_fits("setitem", value, self.dtype)
        value = tensor(value, dtype=self.dtype, device=self.device)
    if not advanced:
        _assign(view, value)
        return
    shape = value.shape
    while shape and shape[0] == 1:
        shape = shape[1:]
    _index_put(self, view, advanced, value.reshape(shape) if shape != value.shape else value)


def _index_put(self: Tensor, view: Tensor, advanced: list, value: Tensor, accumulate=False):
    """index_put_ into ``view``, shown as PyTorch's node (IndexPutBackward0 over the view's
    history and the value, or its base's CopySlices) whatever ember wrote it with."""
    recorded = is_grad_enabled() and (view._requires_grad or value._requires_grad)
    before = gradient_edge(view) if recorded else None
    _index_put_impl(self, view, advanced, value, accumulate)
    if recorded:
        saved = {"indices": _torch_indices(advanced), "accumulate": bool(accumulate)}
        written_in(view, before, "IndexPutBackward0", (value,), saved)


def _torch_indices(advanced: list) -> tuple:
    """The index list PyTorch's index_put_ is given: an index per dim, None for a whole dim."""
    indices, dim = [], 0
    for start, index in advanced:
        indices += [None] * (start - dim)
        indices.append(index)
        dim = start + (index.ndim if _is_mask(index) else 1)
    return tuple(indices)


def _index_put_impl(self: Tensor, view: Tensor, advanced: list, value: Tensor, accumulate):
    """PyTorch's _index_put_impl_: one mask and a one-element CPU value is ``masked_fill_``
    (which casts the value); otherwise the value must have self's dtype."""
    mask = None if accumulate else _lone_mask(view, advanced)
    if mask is not None and value.numel() == 1 and value.device.type == "cpu":
        view.masked_fill_(mask, value.reshape(()))
        return
    _check_dtypes(self, value)
    _put(view, advanced, value, bool(accumulate))


def _lone_mask(view: Tensor, advanced: list):
    """The mask of an index whose only advanced item is a mask on view's device, shaped to
    broadcast against ``view`` (trailing size-1 dims); else None."""
    if len(advanced) != 1 or not _is_mask(advanced[0][1]):
        return None
    dim, mask = advanced[0]
    if mask.device != view.device:
        return None
    trailing = view.ndim - dim - mask.ndim
    return mask.reshape(tuple(mask.shape) + (1,) * trailing) if trailing else mask


def _check_dtypes(self: Tensor, values: Tensor) -> None:
    if values.dtype is not self.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{dt.SCALAR_NAMES[self.dtype]} for the destination and "
            f"{dt.SCALAR_NAMES[values.dtype]} for the source."
        )


def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``self[indices] = values``, or ``+=`` with ``accumulate`` (repeated indices add up).

    Args:
        indices: a tuple of index tensors (long, int, byte or bool), one per leading dim.
        values: a tensor of self's dtype, broadcast to the indexed shape.
        accumulate: add into self instead of overwriting.

    Example:
        >>> x = ember.zeros(3)
        >>> x.index_put_((ember.tensor([0, 0, 2]),), ember.tensor(1.0), accumulate=True)
        tensor([2., 0., 1.])
    """
    if not isinstance(values, Tensor):
        raise TypeError(
            f"index_put_(): argument 'values' must be Tensor, not {type(values).__name__}"
        )
    for position, index in enumerate(indices):
        if not isinstance(index, Tensor):
            raise TypeError(
                f"index_put_(): expected Tensor as element {position} in argument 0 (indices), "
                f"but got {type(index).__name__}"
            )
    return put_key(self, tuple(indices), values, accumulate)


def put_key(self: Tensor, key: tuple, values: Tensor, accumulate: bool) -> Tensor:
    """index_put_ at an indexing key that may also hold slices (aten's Tensor?[] indices,
    None a whole dim, as the masked index decompositions pass them)."""
    view, advanced = _basic(self, key)
    if not advanced:
        _check_dtypes(self, values)
        view.add_(values) if accumulate else _assign(view, values)
    else:
        _index_put(self, view, advanced, values, accumulate)
    return self


def index_put(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place ``index_put_``: a copy of ``self`` with ``values`` put at ``indices``."""
    out = index_put_(self.clone(), indices, values, accumulate)
    # PyTorch's one node over self and values (ember's is the copy's CopySlices)
    saved = {"indices": tuple(indices), "accumulate": bool(accumulate)}
    return present(out, "IndexPutBackward0", self, values, saved=saved)


def _put(view: Tensor, advanced: list, value: Tensor, accumulate: bool) -> None:
    """Write ``value`` (view's dtype) at the advanced indices of ``view`` with one put_."""
    # PyTorch's index_put_: neither the indices nor the value may share memory with the view.
    for _, index_tensor in advanced:
        check_none("index_put_", view, index_tensor, "index")
    check_none("index_put_", view, value, "value")
    columns = _columns(view, advanced)
    # One index on the CPU: put_'s kernel wraps and bounds-checks the flat positions, which for
    # one index are exactly its values' (index * span + j over [-numel, numel)), and writes
    # nothing when one is out of range; PyTorch's error is worded below only then. Two passes
    # over the index (its extremes) saved on accumulate's hot path.
    unchecked = len(columns) == 1 and view.device.type == "cpu"
    permuted, linear, shape, count, place = _linear_index(view, columns, not unchecked)
    rest = tuple(permuted.shape[count:])
    target_shape = shape + rest
    if place:
        # value is laid out with the index dims at `place`: move them to the front like permuted.
        nb = len(shape)
        value = value.expand(*_placed_shape(shape, rest, place)) if value.ndim else value
        if value.ndim:
            order = (
                list(range(place, place + nb))
                + list(range(place))
                + list(range(place + nb, value.ndim))
            )
            value = OPS["permute"](value, order)
    value = value.expand(target_shape)
    span = math.prod(rest)
    positions = linear.reshape(-1)
    if span != 1:
        positions = positions.reshape(-1, 1) * span
        positions = (positions + OPS["arange"](span, None, 1, None, view.device)).reshape(-1)
    try:
        OPS["put_"](permuted, positions, value.reshape(-1), accumulate)
    except IndexError:
        if unchecked:
            _linear_index(view, columns)  # raises PyTorch's IndexError, naming the dim
        raise


def _assign(view: Tensor, value: Tensor) -> None:
    """``view[...] = value`` as PyTorch's copy_to: a value of another shape is broadcast first
    (leading size-1 dims dropped), and the stride-0 view that gives is too hard for the overlap
    check to judge (``x[:] = x[0]`` is allowed; ``x[1:].copy_(x[:-1])`` is not). Only a value
    with more dims, or on the view's storage, needs that; copy_ broadcasts the others."""
    shape = value._shape
    if shape != view._shape and (len(shape) > len(view._shape) or value._storage is view._storage):
        while len(shape) > len(view._shape) and shape[0] == 1:
            shape = shape[1:]
        try:
            fits = broadcast_shapes("setitem", view._shape, shape) == view._shape
        except RuntimeError:
            fits = False
        if fits:
            value = value.reshape(shape).expand(view._shape)
    view.copy_(value)


def _placed_shape(shape: tuple, rest: tuple, place: int) -> tuple:
    return rest[:place] + shape + rest[place:]
