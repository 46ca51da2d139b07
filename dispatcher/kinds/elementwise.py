"""Runners for elementwise ops: promotion, device check, broadcasting, output allocation.

The hot path of the whole library: ``x + y`` on small tensors is mostly the code below, so the
common cases (one or two operands, same dtype, same shape) are checked first and cost a few
attribute reads. Kernels get operands already cast to the compute dtype and broadcast to the
output shape (stride-0 views); Python scalars stay scalars (``kernel(out, a, b, *params)``).
"""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt
from ember._tensor import Tensor, empty

from ..opdef import Promotion
from ..overlap import check_inputs, check_internal
from ..promotion import can_cast, result_type
from ._common import (
    broadcast_shapes,
    cast,
    common_device,
    expand_to,
    unsupported_dtype,
)

_INT_TO_FLOAT = Promotion.INT_TO_FLOAT
_ALWAYS_BOOL = Promotion.ALWAYS_BOOL
_BOOL_TO_LONG = Promotion.BOOL_TO_LONG
_FLOATING = dt.FLOATING
_SCALARS = (bool, int, float, complex)
_OPERANDS = (Tensor, *_SCALARS)


def _types(op, common):
    """(compute dtype, result dtype) for the op's promotion kind; validates the dtype."""
    kind = op.promotion
    if kind is _INT_TO_FLOAT and common.category < _FLOATING:
        common = dt.DEFAULTS.float
        result = common
    elif kind is _ALWAYS_BOOL:
        result = dt.bool_
    elif kind is _BOOL_TO_LONG and common is dt.bool_:
        common = result = dt.int64  # square(bool), as PyTorch's pow(x, 2)
    elif common.category == dt.COMPLEX and "complex_to_real" in op.info:
        result = common.to_real()  # abs and angle of complex numbers are real
    else:
        result = common
    if common not in op.dtypes:
        raise unsupported_dtype(op, common)
    return common, result


def _scalar_for(value, dtype):
    """A Python scalar in the category of ``dtype`` (what kernels expect)."""
    if dtype.category == _FLOATING:
        return float(value)
    if dtype.category == dt.COMPLEX:
        return complex(value)
    if dtype.category == dt.BOOL:
        return bool(value)
    if isinstance(value, float):
        return int(value)  # an int tensor with a float scalar promotes to float first; not here
    return int(value)


def _coerce(op, value, position: int):
    """numpy scalars become Python scalars; anything else non-Tensor is refused, naming the op
    and the argument."""
    if isinstance(value, np.generic):
        return value.item()
    name = op.schema.args[position].name
    raise TypeError(
        f"{op.name}(): argument '{name}' (position {position + 1}) must be Tensor or a number, "
        f"not {type(value).__name__}"
    )


def _fast_entry(dev, kernel, result, compute) -> tuple:
    """``op.fast[compute]``: (device, kernel, result dtype, contiguous call, its key).

    The call is the kernel's ``contiguous`` entry (docs/plugins.md) when the backend has one for
    the dtype: ``call(key, out address, *operand addresses, n)`` for operands contiguous with the
    output, no Python frame between the runner and C. Else None: the kernel is called."""
    contiguous = getattr(kernel, "contiguous", None)
    found = contiguous(compute) if contiguous is not None else None
    call, key = found if found is not None else (None, None)
    return dev, kernel, result, call, key


def unary(op, x, *params):
    # Fast path: ``op.fast`` maps a dtype the full path below validated, and that needs no
    # cast, to its _fast_entry, as in binary().
    if not params:
        entry = op.fast.get(x.__class__ is Tensor and x._dtype)  # False for a non-Tensor: no key
        if entry is not None and entry[0] is x._storage.device:
            out = empty(x._shape, entry[2], entry[0])
            call = entry[3]
            if call is None or not x._contig:
                entry[1](out, x)
            else:
                storage = out._storage
                at = x._storage.ptr
                if x._offset:  # as in binary: most operands start at their storage's first byte
                    at += x._offset * x._dtype.itemsize
                if call(entry[4], storage.ptr, at, storage._nbytes // entry[2].itemsize):
                    entry[1](out, x)  # a status: the kernel raises its error, with its message
            return out
    if not isinstance(x, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be Tensor, not {type(x).__name__}")
    source = x._dtype
    compute, result = _types(op, source)
    check = op.info.get("check")
    if check is not None:
        check(x, *params)
    if compute is not source:
        x = cast(x, compute)
    dev = x._storage.device
    kernel = op.kernel(dev.type, compute)
    if kernel is None:
        return op.decomposition(x, *params)
    if not params and check is None and compute is source:
        op.fast[compute] = _fast_entry(dev, kernel, result, compute)
    out = empty(x._shape, result, dev)
    kernel(out, x, *params)
    return out


def binary(op, a, b, *params):
    # Fast path: two tensors of one dtype, device and shape, or a tensor and a Python number of
    # its category. ``op.fast`` maps a dtype to the _fast_entry that the full path below has
    # validated (keyed by dtype alone: dtypes hash by identity, devices in Python). Contiguous
    # tensors go to the backend's contiguous entry: four integers, no kernel glue.
    if isinstance(a, Tensor):
        bc = b.__class__
        dtype = a._dtype
        if bc is Tensor or isinstance(b, Tensor):
            if dtype is b._dtype and a._shape == b._shape:
                dev = a._storage.device
                if dev is b._storage.device:
                    entry = op.fast.get(dtype)
                    if entry is not None and entry[0] is dev:
                        out = empty(a._shape, entry[2], dev)
                        call = entry[3]
                        if call is None or not (a._contig and b._contig):
                            entry[1](out, a, b)
                            return out
                        storage = out._storage
                        # Most operands start at their storage's first byte: no multiply and add
                        # then (each makes an int: addresses are beyond the small-int cache).
                        pa = a._storage.ptr
                        if a._offset:
                            pa += a._offset * dtype.itemsize
                        pb = b._storage.ptr
                        if b._offset:
                            pb += b._offset * dtype.itemsize
                        n = storage._nbytes // entry[2].itemsize
                        if call(entry[4], storage.ptr, pa, pb, n):
                            entry[1](out, a, b)  # a status: the kernel raises its error
                        return out
        elif bc is float or bc is int:
            category = dtype.category
            if category == _FLOATING or (bc is int and category == dt.INTEGRAL):
                dev = a._storage.device
                entry = op.fast.get(dtype)
                if entry is not None and entry[0] is dev:
                    out = empty(a._shape, entry[2], dev)
                    entry[1](out, a, float(b) if category == _FLOATING else b)
                    return out
    return _binary(op, a, b, *params)


def _binary(op, a, b, *params):
    check = op.info.get("check")
    if check is not None:
        check(a, b, *params)
    ta = isinstance(a, Tensor)
    tb = isinstance(b, Tensor)
    if ta and tb:
        da = a._dtype
        common = da if da is b._dtype else result_type((a, b), Tensor)
        dev = a._storage.device
        if b._storage.device is not dev:
            dev = common_device(op.name, (a, b))
            if a._storage.device is not dev:
                a = a.item()
                ta = False
            elif b._storage.device is not dev:
                b = b.item()
                tb = False
        shape = a._shape if not tb else b._shape if not ta else None
        if shape is None:
            sa, sb = a._shape, b._shape
            shape = sa if sa == sb else broadcast_shapes(op.name, sa, sb)
    elif ta:
        if b.__class__ not in _SCALARS:
            b = _coerce(op, b, 1)
        da = a._dtype
        common = (
            da
            if (da.category >= dt.INTEGRAL and b.__class__ is int)
            or (da.category == _FLOATING and (b.__class__ is float or b.__class__ is int))
            else result_type((a, b), Tensor)
        )
        dev = a._storage.device
        shape = a._shape
    elif tb:
        if a.__class__ not in _SCALARS:
            a = _coerce(op, a, 0)
        common = result_type((a, b), Tensor)
        dev = b._storage.device
        shape = b._shape
    else:
        raise TypeError(
            f"{op.name}(): expected at least one Tensor, got {type(a).__name__} and "
            f"{type(b).__name__}"
        )
    compute, result = _types(op, common)
    if ta:
        if a._dtype is not compute:
            a = cast(a, compute)
        if a._shape != shape:
            a = expand_to(a, shape)
    else:
        a = _scalar_for(a, compute)
    if tb:
        if b._dtype is not compute:
            b = cast(b, compute)
        if b._shape != shape:
            b = expand_to(b, shape)
    else:
        b = _scalar_for(b, compute)
    kernel = op.kernel(dev.type, compute)
    if kernel is None:
        return op.decomposition(a, b, *params)
    if not params and (check is None or _passes_by_dtype(op, check, a, b)):
        op.fast[compute] = _fast_entry(dev, kernel, result, compute)
    out = empty(shape, result, dev)
    kernel(out, a, b, *params)
    return out


def _passes_by_dtype(op, check, *operands) -> bool:
    """Whether the fast path may skip ``check`` for calls in the compute dtype: a check may
    depend on more than dtypes, so only a row that says its check decides by the operands'
    dtypes alone (``check_by_dtype``: sub's refusal of bool) qualifies, and only when it passes
    on ``operands`` as the kernel gets them (tensors of the compute dtype, scalars of its
    category: what the fast path takes)."""
    if not op.info.get("check_by_dtype"):
        return False
    try:
        check(*operands)
    except RuntimeError:
        return False
    return True


def nary(op, *args):
    """Elementwise ops of ``op.info['arity']`` operands (where, lerp, clamp, addcmul...)."""
    arity = op.info["arity"]
    operands, params = list(args[:arity]), args[arity:]
    bool_first = op.info.get("condition", False)
    promoted = operands[1:] if bool_first else operands
    for i, value in enumerate(operands):
        if value is not None and not isinstance(value, _OPERANDS):
            operands[i] = _coerce(op, value, i)
    tensors = [t for t in operands if isinstance(t, Tensor)]
    if not tensors:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument")
    common = result_type([v for v in promoted if v is not None], Tensor)
    compute, result = _types(op, common)
    if op.info.get("limits"):
        operands = _fill_limits(op, operands, compute)
    dev = common_device(op.name, tensors)
    shape = broadcast_shapes(op.name, *(t._shape for t in tensors))
    for i, value in enumerate(operands):
        want = dt.bool_ if (bool_first and i == 0) else compute
        if isinstance(value, Tensor):
            if value._storage.device is not dev:
                operands[i] = _scalar_for(value.item(), want)
                continue
            if value._dtype is not want:
                value = cast(value, want)
            operands[i] = value if value._shape == shape else expand_to(value, shape)
        elif value is not None:
            operands[i] = _scalar_for(value, want)
    kernel = op.kernel(dev.type, compute)
    if kernel is None:
        return op.decomposition(*operands, *params)
    out = empty(shape, result, dev)
    kernel(out, *operands, *params)
    return out


def _fill_limits(op, operands: list, dtype) -> list:
    """clamp(x, min=None, max=...): a missing bound is the dtype's lowest/highest value."""
    if operands[1] is None and operands[2] is None:
        raise RuntimeError(f"{op.name}: At least one of 'min' or 'max' must not be None")
    if dtype.category == _FLOATING:
        low, high = -np.inf, np.inf
    else:
        info = np.iinfo(dtype.np)
        low, high = int(info.min), int(info.max)
    return [
        operands[0],
        low if operands[1] is None else operands[1],
        high if operands[2] is None else operands[2],
    ]


def _inplace_fast(op, target, args):
    """The common in-place call, ``p.add_(g)`` / ``m.mul_(0.9)`` / ``v.addcmul_(g, g, value=b)``:
    a contiguous target and operands of its dtype, device and shape, or Python numbers of its
    category. ``op.fast`` holds (device, kernel, arity) once the full path has validated the dtype.
    An operand that is the target itself (``x.mul_(x)``) qualifies; another view of its storage
    goes to the full path, which checks the overlap. Returns None when the call doesn't qualify."""
    entry = op.fast.get(target._dtype)
    if entry is None or not target._contig or entry[0] is not target._storage.device:
        return None
    if target._storage.readonly:  # the full path refuses it, naming the op
        return None
    dev, kernel, arity = entry
    dtype = target._dtype
    floating = dtype.category == _FLOATING
    prepared = [target, target]
    for value in args[: arity - 1]:
        cls = value.__class__
        if cls is float:
            if not floating:
                return None
        elif cls is int:
            if floating:
                value = float(value)
        elif isinstance(value, Tensor):
            if value._dtype is not dtype or value._shape != target._shape:
                return None
            storage = value._storage
            if storage.device is not dev or (storage is target._storage and value is not target):
                return None
        else:
            return None
        prepared.append(value)
    kernel(*prepared, *args[arity - 1 :])
    target._storage.version += 1
    return target


def inplace(op, target, *args):
    """``a.add_(b)``: the functional op's kernel writing into ``target``.

    The result dtype must be castable to the target's (no float into int), and the broadcast
    shape must be the target's own. When the compute dtype differs, compute then copy back.
    """
    if op.fast and isinstance(target, Tensor):
        done = _inplace_fast(op, target, args)
        if done is not None:
            return done
    base = op.inplace_of
    if not isinstance(target, Tensor):
        raise TypeError(f"{op.name}(): self must be a Tensor")
    arity = base.info.get("arity", 1)
    others = args[: arity - 1]
    for value in others:  # numpy scalars and refusals; a plain loop keeps the common case cheap
        if value is not None and not isinstance(value, _OPERANDS):
            others = tuple(
                v if v is None or isinstance(v, _OPERANDS) else _coerce(base, v, i + 1)
                for i, v in enumerate(others)
            )
            break
    operands = (target, *others)
    params = args[arity - 1 :]
    present = [v for v in operands if v is not None]
    common = result_type(present, Tensor)
    compute, result = _types(base, common)
    check = base.info.get("check")
    if check is not None:
        check(*operands, *params)
    if base.info.get("limits"):
        operands = tuple(_fill_limits(base, list(operands), compute))
    if result is not compute and "complex_to_real" in base.info:  # |z| would fit z's dtype
        raise RuntimeError(f"In-place {base.name} is not supported for complex tensors.")
    if not can_cast(result, target._dtype):
        raise RuntimeError(
            f"{op.name}: result type {dt.SCALAR_NAMES[result]} can't be cast to the desired "
            f"output type {dt.SCALAR_NAMES[target._dtype]}"
        )
    shapes = [t._shape for t in operands if isinstance(t, Tensor)]
    shape = broadcast_shapes(base.name, *shapes)
    if shape != target._shape:
        raise RuntimeError(
            f"{op.name}: output with shape {list(target._shape)} doesn't match the broadcast shape "
            f"{list(shape)}"
        )
    check_internal(op.name, target)
    check_inputs(op.name, target, others, "partial")
    dev = common_device(op.name, [t for t in operands if isinstance(t, Tensor)])
    if compute is target._dtype and result is target._dtype and target._storage.device is dev:
        prepared = [target]
        for value in operands[1:]:
            if isinstance(value, Tensor):
                if value._storage.device is not dev:
                    value = _scalar_for(value.item(), compute)
                else:
                    if value._dtype is not compute:
                        value = cast(value, compute)
                    if value._shape != shape:
                        value = expand_to(value, shape)
            elif value is not None:
                value = _scalar_for(value, compute)
            prepared.append(value)
        kernel = base.kernel(dev.type, compute)
        if kernel is not None:
            if (
                (check is None or _passes_by_dtype(base, check, *prepared))
                and not base.info.get("limits")
                and target._dtype.category != dt.BOOL
            ):
                op.fast[target._dtype] = (dev, kernel, arity)
            kernel(target, *prepared, *params)
            target._storage.version += 1
            return target
    fresh = base.backend((*operands, *params))
    _copy_into(target, fresh)
    return target


def _copy_into(target: Tensor, source: Tensor) -> None:
    from ._common import OPS

    if source._shape != target._shape:
        source = expand_to(source, target._shape)
    OPS["copy_"].backend((target, source))
