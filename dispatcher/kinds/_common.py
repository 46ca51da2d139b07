"""Helpers every runner uses: shapes, dims, devices, casts and broadcast views below autograd."""

from __future__ import annotations

import numbers

from ember import _dtype as dt
from ember._device import CPU
from ember._storage import read_only_error
from ember._tensor import Tensor, contiguous_strides, empty, is_contiguous, make

from ..opdef import Promotion
from ..overlap import check_inputs

# Filled by dispatcher.table once the ops exist (runners look ops up by name at call time).
OPS: dict = {}


def broadcast_shapes(op_name: str, *shapes: tuple) -> tuple:
    """numpy/PyTorch broadcasting; the error names the op and every shape."""
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            current = out[offset + i]
            if size == current or size == 1:
                continue
            if current == 1:
                out[offset + i] = size
            else:
                listed = ", ".join(str(list(s)) for s in shapes)
                raise RuntimeError(
                    f"{op_name}: shapes {listed} are not broadcastable: size {size} vs {current} "
                    f"at dimension {offset + i - ndim}"
                )
    return tuple(out)


def expand_to(t: Tensor, shape: tuple) -> Tensor:
    """A stride-0 view of ``t`` broadcast to ``shape`` (assumed broadcast-compatible)."""
    lead = len(shape) - len(t._shape)
    strides = [0] * lead
    for size, target, step in zip(t._shape, shape[lead:], t._stride):
        strides.append(step if size == target else 0)
    strides = tuple(strides)
    out = make(t._storage, shape, strides, t._offset, t._dtype, is_contiguous(shape, strides))
    return out


def wrap_dim(dim, ndim: int, op_name: str) -> int:
    if not isinstance(dim, int):
        dim = _as_int(dim, op_name, "dim")
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"{op_name}: Dimension out of range (expected to be in range of "
            f"[{-bound}, {bound - 1}], but got {dim})"
        )
    return dim + bound if dim < 0 else dim


def wrap_dims(dims, ndim: int, op_name: str) -> tuple:
    """Sorted, de-duplicated, non-negative dims; None or () means every dim."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int) or not hasattr(dims, "__iter__"):
        dims = (dims,)
    out = sorted(wrap_dim(d, ndim, op_name) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op_name}: dim {out} appears multiple times in the list of dims")
    return tuple(out)


def _as_int(value, op_name: str, what: str) -> int:
    try:
        return int(value.__index__())
    except (AttributeError, TypeError):
        raise TypeError(f"{op_name}: {what} must be an int, got {type(value).__name__}") from None


def common_device(op_name: str, tensors) -> object:
    """The device of a call. Every tensor must be on it, except zero-dim CPU tensors (PyTorch
    lets those mix with any device, as scalars)."""
    device = None
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        dev = t._storage.device
        if dev is CPU and not t._shape:
            continue
        if device is None:
            device = dev
        elif dev is not device:
            raise RuntimeError(
                f"{op_name}: Expected all tensors to be on the same device, but found at least two "
                f"devices, {device} and {dev}!"
            )
    return CPU if device is None else device


def bad_tensor_argument(op, args, error: Exception) -> TypeError | None:
    """PyTorch's TypeError for an argument that ``op``'s schema types Tensor but ``args`` holds
    something else, e.g. "linear(): argument 'input' (position 1) must be Tensor, not list";
    None when no such argument explains ``error``.

    Op.__call__ asks only after a runner failed with AttributeError or TypeError, so the common
    path pays nothing. Many ops take numbers for tensors (elementwise ops, scatter's src...), so
    a number is blamed only when ``error`` names its type ("'float' object has no attribute").
    """
    if getattr(error, "names_argument", False):
        return None  # the runner named the argument as PyTorch does (copy_ takes numbers)
    suspects = []
    for i, arg in enumerate(op.schema.args):
        if not arg.is_tensor or i >= len(args):
            continue
        value = args[i]
        if value is None and arg.optional:
            continue
        if arg.is_list:
            found = _bad_tensor_list(op, arg, i, value)
            if found is not None:
                return found
        elif not isinstance(value, Tensor):
            number = isinstance(value, numbers.Number)
            if not number or f"'{type(value).__name__}'" in str(error):
                suspects.append((number, i, arg.name, value))
    if not suspects:
        return None
    _, i, name, value = min(suspects, key=lambda s: s[:2])
    return TypeError(
        f"{op.name}(): argument '{name}' (position {i + 1}) must be Tensor, not "
        f"{type(value).__name__}"
    )


_LIST_POSITIONS: dict = {}  # op -> positions of its Tensor[] arguments


def check_tensor_lists(op, args) -> None:
    """A tensor where the schema takes a list of tensors (``cat(x)``) would be iterated row by
    row; refuse it as PyTorch does: "must be tuple of Tensors, not Tensor"."""
    positions = _LIST_POSITIONS.get(op)
    if positions is None:
        args_ = op.schema.args
        positions = _LIST_POSITIONS[op] = [
            i for i, a in enumerate(args_) if a.is_tensor and a.is_list
        ]
    for i in positions:
        if i < len(args) and isinstance(args[i], Tensor):
            raise _bad_tensor_list(op, op.schema.args[i], i, args[i])


def _bad_tensor_list(op, arg, i: int, value) -> TypeError | None:
    if not isinstance(value, (list, tuple)):
        return TypeError(
            f"{op.name}(): argument '{arg.name}' (position {i + 1}) must be tuple of Tensors, "
            f"not {type(value).__name__}"
        )
    for j, item in enumerate(value):
        if not isinstance(item, Tensor) and not (item is None and arg.optional):
            return TypeError(
                f"{op.name}(): expected Tensor as element {j} in argument {i} ('{arg.name}'), "
                f"but got {type(item).__name__}"
            )
    return None


def missing_kernel(kernel: str, dtype) -> NotImplementedError:
    """PyTorch's error for a dtype its CPU kernel ``kernel`` has no loop for (its dispatch
    macro's): float8 and uint16/32/64 reach many of them."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{dt.SCALAR_NAMES[dtype]}'")


# Ops PyTorch refuses for a whole dtype category by meaning, before any kernel: a RuntimeError
# naming the argument (ember's row check would say "not implemented", PyTorch's own type for a
# kernel it lacks). {op: (lowest category taken, message)}; float8 is floating (its refusals
# are the kernels').
_BY_MEANING = {
    "norm": (
        dt.FLOATING,
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {dtype}",
    ),
    "cdist": (dt.FLOATING, "cdist only supports floating-point dtypes, {ARG} got: {dtype}"),
}


def unsupported_dtype(op, dtype, arg: str | None = None) -> RuntimeError:
    """PyTorch's error for a dtype without a kernel: NotImplementedError (a RuntimeError), or
    the op's own RuntimeError for a dtype it has no meaning for (``arg``: the argument's name,
    the first tensor argument's when not given)."""
    meaning = _BY_MEANING.get(op.name)
    if meaning is not None and dtype.category < meaning[0]:
        if arg is None:
            arg = op.schema.args[op.tensor_positions[0]].name
        return RuntimeError(meaning[1].format(dtype=dt.SCALAR_NAMES[dtype], ARG=arg.upper()))
    names = ", ".join(sorted(d.name for d in op.dtypes))
    if dtype in dt.LIMITED:  # PyTorch's words for its limited-support dtypes
        return NotImplementedError(
            f"\"{op.name}\" not implemented for '{dt.SCALAR_NAMES[dtype]}' (ember gives "
            f"{dtype.name} PyTorch's limited support: factories, casts, copies and views)"
        )
    return NotImplementedError(f'"{op.name}" not implemented for {dtype.name} (supported: {names})')


# op -> position of its ``dtype`` argument (a position past any call's arguments when it has none)
_DTYPE_POSITION: dict = {}
_NONE = 1 << 30


def check_dtypes(op, args) -> None:
    """Refuse tensors of dtypes outside the op's row up front (a composite would otherwise fail
    deep inside, naming another op, or return numbers for a dtype it does not define).

    A ``dtype=`` argument, when given, is what the op computes in, so it is checked instead;
    ops that promote integers to floats accept integer and bool tensors.
    """
    allowed = op.dtypes
    if len(allowed) == len(dt.ALL):
        return
    n = len(args)
    position = _DTYPE_POSITION.get(op)
    if position is None:  # found once per op: composites run this on every call
        names = [arg.name for arg in op.schema.args]
        position = _DTYPE_POSITION[op] = names.index("dtype") if "dtype" in names else _NONE
    if position < n and args[position] is not None:
        if args[position] not in allowed:
            raise unsupported_dtype(op, args[position])
        return
    promotes = op.promotion is Promotion.INT_TO_FLOAT
    for i in op.tensor_positions:
        value = args[i] if i < n else None
        if isinstance(value, Tensor):  # the common case, without building a tuple
            if value._dtype in allowed or (promotes and value._dtype.category != dt.FLOATING):
                continue
            raise unsupported_dtype(op, value._dtype, op.schema.args[i].name)
        for t in value if isinstance(value, (list, tuple)) else (value,):
            if not isinstance(t, Tensor) or t._dtype in allowed:
                continue
            if not (promotes and t._dtype.category != dt.FLOATING):
                raise unsupported_dtype(op, t._dtype)


# The integer dtype of each item size: a limited dtype's bits, for devices that only move them.
_BITS = {1: dt.uint8, 2: dt.int16, 4: dt.int32, 8: dt.int64}


def _as_bits(t: Tensor) -> Tensor:
    bits = _BITS[t._dtype.itemsize]
    return make(t._storage, t._shape, t._stride, t._offset, bits, t._contig)


def _cast_limited(t: Tensor, dtype) -> Tensor:
    """A cast from or to float8 / uint16-64 on a device other than the CPU: device kernels know
    none of them, so a same-dtype copy moves their bits as integers and a real cast runs on the
    CPU (PyTorch's rounding lives in the CPU backend), the bytes travelling both ways."""
    from .copy import _from_host, _to_host

    if t._dtype is dtype:
        out = _as_bits(cast(_as_bits(t), _BITS[dtype.itemsize]))
        return make(out._storage, out._shape, out._stride, 0, dtype, True)
    device = t._storage.device
    if t._dtype in dt.LIMITED:
        host = _to_host(cast(t, t._dtype))
    else:
        host = _to_host(t)
    return _from_host(cast(host, dtype), device)


def cast(t: Tensor, dtype) -> Tensor:
    """A contiguous copy of ``t`` in ``dtype`` (below autograd: no graph is recorded)."""
    if t._dtype.category == dt.COMPLEX and dtype.category != dt.COMPLEX:
        from .complex import real_part

        t = real_part(t)  # PyTorch keeps the real parts (and warns)
    kind = t._storage.device.type
    if kind not in ("cpu", "meta") and (t._dtype in dt.LIMITED or dtype in dt.LIMITED):
        return _cast_limited(t, dtype)
    out = empty(t._shape, dtype, t._storage.device)
    if kind != "cpu" and dtype.category == dt.COMPLEX and t._dtype.category == dt.COMPLEX:
        # complex kernels are CPU only, and copy_'s CPU fallback moves its arguments with .cpu(),
        # which comes back here for a strided tensor: copy the real views on the device instead
        from .complex import view_as_real

        real = dtype.to_real()
        OPS["copy_"].kernel(kind, real)(view_as_real(None, out), view_as_real(None, t))
        return out
    OPS["copy_"].kernel(kind, dtype)(out, t)
    return out


def contiguous(t: Tensor) -> Tensor:
    """``t`` itself when contiguous, else a contiguous copy (below autograd)."""
    if t._contig:
        return t
    return cast(t, t._dtype)


def to_device_scalar(t: Tensor):
    """A zero-dim CPU tensor as a Python number, to pass to another device's kernel."""
    return t.item()


def alloc(shape: tuple, dtype, device) -> Tensor:
    return empty(shape, dtype, device)


def fill(t: Tensor, value) -> Tensor:
    OPS["fill_"].kernel(t._storage.device.type, t._dtype)(t, value)
    return t


def strides_of(shape: tuple) -> tuple:
    return contiguous_strides(shape)


def check_writable(op_name: str, t: Tensor) -> None:
    """Refuse writing into read-only memory (from a non-writable numpy array): a kernel writing
    there would corrupt an immutable object (``bytes``) or crash on a read-only mapping."""
    if t._storage.readonly:
        raise read_only_error(op_name)


def inplace_via_copy(op, target, *args):
    """An in-place op as its functional op followed by a copy into ``target`` (below autograd).

    These are index ops (scatter_, index_add_): like PyTorch, their index and source tensors may
    share no memory with ``target``, even though the copy would make the result well defined."""
    if isinstance(target, Tensor):
        check_writable(op.name, target)  # before computing, and naming this op, not copy_
    check_inputs(op.name, target, args, "any")
    result = op.inplace_of.backend((target, *args))
    OPS["copy_"].backend((target, result))
    return target
