"""View ops: new shape/strides/offset over the same storage. The core implements them for every
device; no backend kernel is involved (reshape copies through ``copy_`` when it must)."""

from __future__ import annotations

import math

from ember._tensor import Tensor, contiguous_strides, is_contiguous, make

from ._common import contiguous, wrap_dim, wrap_dims
from ._limits import INT64_MAX, MAX_DIMS, check_dims, check_shape


def _view(x: Tensor, shape: tuple, stride: tuple, offset: int) -> Tensor:
    out = make(x._storage, shape, stride, offset, x._dtype, is_contiguous(shape, stride))
    out._base = x if x._base is None else x._base
    return out


def _dense_view(x: Tensor, shape: tuple) -> Tensor:
    """A view of contiguous ``x`` as ``shape``: contiguous too, no stride test needed."""
    out = make(x._storage, shape, contiguous_strides(shape), x._offset, x._dtype, True)
    out._base = x if x._base is None else x._base
    return out


def _check(op, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _ints(op, values, what: str) -> tuple:
    if values.__class__ is tuple and all(v.__class__ is int for v in values):
        return values  # the common call, x.view(b, t, c): nothing to convert
    if isinstance(values, int):
        return (values,)
    try:
        return tuple(int(v.__index__()) for v in values)
    except (AttributeError, TypeError):
        raise TypeError(f"{op.name}(): {what} must be a sequence of ints, got {values!r}") from None


def infer_size(op_name: str, shape: tuple, numel: int) -> tuple:
    """Resolve one -1 in ``shape`` so that it holds ``numel`` elements."""
    # Sizes all positive and holding numel (every reshape of the hot path) need nothing more:
    # their product is numel, so within every limit but the number of dims.
    if not shape or len(shape) > MAX_DIMS:
        return _infer_size(op_name, shape, numel)
    low = min(shape)
    if low > 0 and math.prod(shape) == numel:
        return shape
    if low == -1 and shape.count(-1) == 1:  # x.view(-1, c): the others positive, fitting numel
        known = -math.prod(shape)
        if known and not numel % known:
            i = shape.index(-1)
            return shape[:i] + (numel // known,) + shape[i + 1 :]
    return _infer_size(op_name, shape, numel)


def _infer_size(op_name: str, shape: tuple, numel: int) -> tuple:
    """infer_size's general case, with its errors."""
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError(f"{op_name}: only one dimension can be inferred")
    if shape and min(shape) < -1:
        i = next(i for i, s in enumerate(shape) if s < -1)
        raise RuntimeError(
            f"{op_name}: invalid shape dimension {shape[i]} at index {i} of shape {list(shape)}"
        )
    known = math.prod(s for s in shape if s != -1)
    if known > INT64_MAX or not known or len(shape) > MAX_DIMS:  # rare: say which limit
        check_shape(op_name, tuple(1 if s == -1 else s for s in shape))
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(
                f"{op_name}: shape '{list(shape)}' is invalid for input of size {numel}"
            )
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"{op_name}: shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def view_strides(old_shape: tuple, old_stride: tuple, new_shape: tuple):
    """Strides that view ``old`` as ``new_shape`` without copying, or None (PyTorch's
    computeStride: each run of dims contiguous among themselves may be re-split freely)."""
    numel = math.prod(old_shape)
    if numel == 0 or not old_shape:
        return contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (
            old_shape[tensor_d - 1] != 1 and old_stride[tensor_d - 1] != tensor_numel * chunk_base
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def view(op, x, shape):
    _check(op, x)
    shape = infer_size("view", _ints(op, shape, "size"), math.prod(x._shape))
    if x._contig:
        return _dense_view(x, shape)
    stride = view_strides(x._shape, x._stride, shape)
    if stride is None:
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (input shape "
            f"{list(x._shape)}, strides {list(x._stride)}, requested {list(shape)}): at least one "
            "dimension spans across two contiguous subspaces. Use .reshape(...) instead."
        )
    return _view(x, shape, stride, x._offset)


def reshape(op, x, shape):
    _check(op, x)
    shape = infer_size("reshape", _ints(op, shape, "shape"), math.prod(x._shape))
    if x._contig:
        return _dense_view(x, shape)
    stride = view_strides(x._shape, x._stride, shape)
    if stride is None:
        # A copy: not a view, so its _base stays None (writes must not reach x).
        dense = contiguous(x)
        return make(dense._storage, shape, contiguous_strides(shape), 0, x._dtype, True)
    return _view(x, shape, stride, x._offset)


def permute(op, x, dims):
    _check(op, x)
    dims = _ints(op, dims, "dims")
    ndim = len(x._shape)
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute(): number of dims don't match in permute: input has {ndim} dims, "
            f"got {len(dims)} ({list(dims)})"
        )
    order = tuple(wrap_dim(d, ndim, "permute") for d in dims)
    if len(set(order)) != ndim:
        raise RuntimeError(f"permute(): duplicate dims are not allowed. Got dims {list(dims)}")
    return _view(
        x, tuple(x._shape[d] for d in order), tuple(x._stride[d] for d in order), x._offset
    )


def transpose(op, x, dim0, dim1):
    _check(op, x)
    ndim = len(x._shape)
    if ndim == 0:
        return _view(x, (), (), x._offset)
    if ndim == 2 and dim0 in _PAIR and dim1 in _PAIR:  # a matrix: t(), or itself
        return _swapped(x) if dim0 % 2 != dim1 % 2 else _view(x, x._shape, x._stride, x._offset)
    a, b = wrap_dim(dim0, ndim, "transpose"), wrap_dim(dim1, ndim, "transpose")
    shape, stride = list(x._shape), list(x._stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    return _view(x, tuple(shape), tuple(stride), x._offset)


# The dims of a matrix, either way spelled (d % 2 is the dim).
_PAIR = frozenset({0, 1, -1, -2})


def _swapped(x: Tensor) -> Tensor:
    """Matrix ``x`` with its two dims swapped (t(), and transpose of a matrix)."""
    (rows, cols), (down, across) = x._shape, x._stride
    shape, stride = (cols, rows), (across, down)
    out = make(x._storage, shape, stride, x._offset, x._dtype, is_contiguous(shape, stride))
    out._base = x if x._base is None else x._base
    return out


def t(op, x):
    _check(op, x)
    if len(x._shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return _swapped(x) if len(x._shape) == 2 else _view(x, x._shape, x._stride, x._offset)


def expand(op, x, size):
    _check(op, x)
    size = _ints(op, size, "size")
    ndim = len(x._shape)
    if len(size) < ndim:
        raise RuntimeError(
            f"expand(): the number of sizes provided ({len(size)}) must be greater or equal to the "
            f"number of dimensions in the tensor ({ndim})"
        )
    lead = len(size) - ndim
    shape, stride = [], []
    for i, target in enumerate(size):
        if i < lead:
            if target < 0:
                raise RuntimeError(
                    "expand(): -1 is not allowed in a leading, non-existing dimension"
                )
            shape.append(target)
            stride.append(0)
            continue
        have, step = x._shape[i - lead], x._stride[i - lead]
        if target == -1:
            target = have
        if have == target:
            shape.append(have)
            stride.append(step)
        elif have == 1 and target >= 0:
            shape.append(target)
            stride.append(0)
        else:
            raise RuntimeError(
                f"expand(): The expanded size of the tensor ({target}) must match the existing "
                f"size ({have}) at non-singleton dimension {i}. Target sizes: {list(size)}. "
                f"Tensor sizes: {list(x._shape)}"
            )
    shape = tuple(shape)
    if not 0 < math.prod(shape) <= INT64_MAX or len(shape) > MAX_DIMS:  # sizes are >= 0 here
        check_shape("expand", shape)
    return _view(x, shape, tuple(stride), x._offset)


def narrow(op, x, dim, start, length):
    """PyTorch's checks in its order: a dim, a length >= 0, a start within [-size, size]
    (IndexError), then the end within the dim."""
    _check(op, x)
    if not x._shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(x._shape), "narrow")
    size, start, length = x._shape[d], int(start), int(length)
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative. (got {length})")
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start}) "
            f"(narrow() of dim {d} of shape {list(x._shape)})"
        )
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size}). (narrow() of "
            f"dim {d} of shape {list(x._shape)})"
        )
    shape = x._shape[:d] + (length,) + x._shape[d + 1 :]
    return _view(x, shape, x._stride, x._offset + start * x._stride[d])


def slice_(op, x, dim=0, start=None, end=None, step=1):
    """``x[start:end:step]`` along ``dim`` (Python slice rules; step > 0)."""
    _check(op, x)
    d = wrap_dim(dim, len(x._shape), "slice")
    if step <= 0:  # PyTorch's ValueErrors; ember's message adds the way out
        reason = "slice step cannot be zero" if step == 0 else "step must be greater than zero"
        raise ValueError(f"{reason} (slice(): got step {step}; flip() reverses a tensor)")
    begin, stop, step = slice(start, end, step).indices(x._shape[d])
    length = max(0, (stop - begin + step - 1) // step)
    shape = x._shape[:d] + (length,) + x._shape[d + 1 :]
    stride = x._stride[:d] + (x._stride[d] * step,) + x._stride[d + 1 :]
    offset = x._offset + (begin * x._stride[d] if length else 0)
    return _view(x, shape, stride, offset)


def select(op, x, dim, index):
    _check(op, x)
    if not x._shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(x._shape), "select")
    size = x._shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    if index < 0:
        index += size
    shape = x._shape[:d] + x._shape[d + 1 :]
    stride = x._stride[:d] + x._stride[d + 1 :]
    return _view(x, shape, stride, x._offset + index * x._stride[d])


def squeeze(op, x, dim=None):
    _check(op, x)
    ndim = len(x._shape)
    dims = wrap_dims(dim, ndim, "squeeze") if dim is not None else tuple(range(ndim))
    keep = [i for i in range(ndim) if not (i in dims and x._shape[i] == 1)]
    return _view(x, tuple(x._shape[i] for i in keep), tuple(x._stride[i] for i in keep), x._offset)


def unsqueeze(op, x, dim):
    _check(op, x)
    ndim = len(x._shape)
    check_dims("unsqueeze", ndim + 1)
    d = wrap_dim(dim, ndim + 1, "unsqueeze")
    step = x._shape[d] * x._stride[d] if d < ndim else 1
    return _view(
        x, x._shape[:d] + (1,) + x._shape[d:], x._stride[:d] + (step,) + x._stride[d:], x._offset
    )


def flatten(op, x, start_dim=0, end_dim=-1):
    _check(op, x)
    ndim = len(x._shape)
    if ndim == 0:
        return reshape(op, x, (1,))
    start, end = wrap_dim(start_dim, ndim, "flatten"), wrap_dim(end_dim, ndim, "flatten")
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = x._shape[:start] + (math.prod(x._shape[start : end + 1]),) + x._shape[end + 1 :]
    return reshape(op, x, shape)


def unflatten(op, x, dim, sizes):
    _check(op, x)
    d = wrap_dim(dim, len(x._shape), "unflatten")
    sizes = _ints(op, sizes, "sizes")
    if not sizes:
        raise RuntimeError(f"unflatten: sizes must be non-empty (dim {d} of {list(x._shape)})")
    sizes = infer_size("unflatten", sizes, x._shape[d])
    return view(op, x, x._shape[:d] + sizes + x._shape[d + 1 :])


def as_strided(op, x, size, stride, storage_offset=None):
    _check(op, x)
    size, stride = _ints(op, size, "size"), _ints(op, stride, "stride")
    if len(size) != len(stride):
        raise RuntimeError(
            f"as_strided(): mismatch in length of strides ({len(stride)}) and shape ({len(size)})"
        )
    offset = x._offset if storage_offset is None else int(storage_offset)
    check_shape("as_strided", size)
    # A tensor from a reversed numpy array keeps its negative strides (ember allows those), and
    # restating such a geometry is fine; new negative strides are refused, as in PyTorch.
    if stride and min(stride) < 0 and (not x._stride or min(x._stride) >= 0):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}"
        )
    if offset < 0:
        raise RuntimeError(f"as_strided(): Tensor: invalid storage offset {offset}")
    if math.prod(size):
        lo = offset + sum((n - 1) * s for n, s in zip(size, stride) if s < 0)
        hi = offset + sum((n - 1) * s for n, s in zip(size, stride) if s > 0)
        if lo < 0 or (hi + 1) * x._dtype.itemsize > x._storage._nbytes:
            raise RuntimeError(
                f"as_strided(): size {list(size)}, stride {list(stride)} and offset {offset} reach "
                f"outside the storage of {x._storage._nbytes} bytes"
            )
    return _view(x, size, stride, offset)


def diagonal(op, x, offset=0, dim1=0, dim2=1):
    _check(op, x)
    ndim = len(x._shape)
    a, b = wrap_dim(dim1, ndim, "diagonal"), wrap_dim(dim2, ndim, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    start = x._offset
    if offset >= 0:
        length = max(0, min(x._shape[a], x._shape[b] - offset))
        start += offset * x._stride[b] if length else 0
    else:
        length = max(0, min(x._shape[a] + offset, x._shape[b]))
        start += -offset * x._stride[a] if length else 0
    keep = [i for i in range(ndim) if i not in (a, b)]
    shape = tuple(x._shape[i] for i in keep) + (length,)
    stride = tuple(x._stride[i] for i in keep) + (x._stride[a] + x._stride[b],)
    return _view(x, shape, stride, start)


def movedim(op, x, source, destination):
    _check(op, x)
    ndim = len(x._shape)
    source, destination = _ints(op, source, "source"), _ints(op, destination, "destination")
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
            f"contain the same number of dims as destination ({list(destination)} dims)"
        )
    src = [wrap_dim(d, ndim, "movedim") for d in source]
    dst = [wrap_dim(d, ndim, "movedim") for d in destination]
    for name, dims, given in (("source", src, source), ("destination", dst, destination)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    if not ndim:  # a 0-d tensor takes dims 0 and -1 and has nothing to move
        return permute(op, x, ())
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(ndim) if i not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(op, x, order)


def unfold(op, x, dimension, size, step):
    """Sliding windows of ``size`` every ``step`` along ``dimension``, as a new last dim."""
    _check(op, x)
    ndim = len(x._shape)
    d = wrap_dim(dimension, ndim, "unfold")  # a 0-d tensor takes 0 and -1
    length = x._shape[d] if ndim else 1
    check_dims("unfold", ndim + 1)
    if size < 0:
        raise RuntimeError(f"unfold(): size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(
            f"unfold(): maximum size for tensor at dimension {d} is {length} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    if not ndim:  # PyTorch: the window alone, no dim of windows
        return _view(x, (size,), (1,), x._offset)
    count = (length - size) // step + 1
    shape = x._shape[:d] + (count,) + x._shape[d + 1 :] + (size,)
    stride = x._stride[:d] + (x._stride[d] * step,) + x._stride[d + 1 :] + (x._stride[d],)
    return _view(x, shape, stride, x._offset)


def detach(op, x):
    _check(op, x)
    out = make(x._storage, x._shape, x._stride, x._offset, x._dtype, x._contig)
    return out


def negative_stride_view(x: Tensor, dims: tuple) -> Tensor:
    """``x`` reversed along ``dims`` as a view with negative strides (flip copies from it)."""
    offset = x._offset
    stride = list(x._stride)
    for d in dims:
        if x._shape[d] > 0:
            offset += (x._shape[d] - 1) * stride[d]
        stride[d] = -stride[d]
    return make(x._storage, x._shape, tuple(stride), offset, x._dtype, False)
