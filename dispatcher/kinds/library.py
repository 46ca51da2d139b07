"""Runner for third-party ops (``ember.library``): the op's shape rule allocates the outputs.

A library op gets the calling convention of the built-in ops, ``kernel(*outs, *inputs, *params)``,
with less for its author to handle: outputs are fresh contiguous tensors whose shapes and dtypes
come from the op's shape rule (``ember.library.register_shape``); tensor inputs arrive contiguous,
on the call's device (0-dim CPU tensors included) and without autograd history; other arguments
arrive as given. There is no type promotion: the dtype of the first tensor argument picks the
kernel.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ember._tensor import Tensor, empty, make

from ._common import check_dtypes, common_device
from .copy import transfer


class TensorMeta(NamedTuple):
    """What a shape rule sees of a tensor argument: its shape, dtype and device, no data.

    A rule may return one of these (``return x``: "shaped like x") or a ``(shape, dtype)`` pair.
    """

    shape: tuple
    dtype: object
    device: object

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return math.prod(self.shape)


def meta_of(value):
    """A call argument as a shape rule sees it: tensors (and lists of them) become TensorMeta."""
    if isinstance(value, Tensor):
        return TensorMeta(value._shape, value._dtype, value._storage.device)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return [meta_of(v) for v in value]
    return value


def _tensors(args) -> list:
    found = []
    for arg in args:
        if isinstance(arg, Tensor):
            found.append(arg)
        elif isinstance(arg, (list, tuple)):
            found.extend(t for t in arg if isinstance(t, Tensor))
    return found


def output_specs(op, args) -> list[tuple]:
    """``[(shape, dtype)]`` per output, from the op's shape rule; errors name the op."""
    rule = op.info.get("shape")
    if rule is None:
        raise RuntimeError(
            f"{op.name}: no shape rule to allocate its outputs; register one with "
            f"ember.library.register_shape('{op.name}', fn)"
        )
    found = rule(*(meta_of(a) for a in args))
    one = isinstance(found, TensorMeta) or _is_pair(found)
    items = list(found) if isinstance(found, (list, tuple)) and not one else [found]
    if len(items) != op.num_outputs:
        raise RuntimeError(
            f"{op.name}: its shape rule gave {len(items)} outputs, the schema returns "
            f"{op.num_outputs} ({op.schema.text})"
        )
    return [_spec(op, item) for item in items]


def _is_pair(item) -> bool:
    """Whether ``item`` is a ``(shape, dtype)`` pair."""
    from ember import _dtype as dt

    return (
        isinstance(item, (list, tuple))
        and len(item) == 2
        and isinstance(item[1], dt.dtype)
        and isinstance(item[0], (list, tuple))
    )


def _spec(op, item) -> tuple:
    if isinstance(item, TensorMeta):
        return item.shape, item.dtype
    if _is_pair(item) and all(isinstance(n, int) and n >= 0 for n in item[0]):
        return tuple(item[0]), item[1]
    raise RuntimeError(
        f"{op.name}: its shape rule must return (shape, dtype) or a TensorMeta per output, "
        f"got {item!r}"
    )


def _on(device, value):
    if isinstance(value, Tensor):
        if value._contig and not value._requires_grad and value._storage.device is device:
            return value  # the common case, first
        t = transfer(value, device)
        if t._requires_grad:  # kernels see data only (so ``t.numpy()`` works in a CPU kernel)
            t = make(t._storage, t._shape, t._stride, t._offset, t._dtype, t._contig)
        return t
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return [_on(device, v) for v in value]
    return value


def run(op, *args):
    """The Backend layer of a library op: allocate from the shape rule, call the kernel."""
    tensors = _tensors(args)
    if not tensors:
        raise TypeError(f"{op.name}(): needs at least one tensor argument ({op.schema.text})")
    check_dtypes(op, args)
    device = common_device(op.name, tensors)
    kernel = op.kernel(device.type, tensors[0]._dtype)
    if kernel is None:
        return op.decomposition(*args)
    outs = [empty(shape, dtype, device) for shape, dtype in output_specs(op, args)]
    if any(math.prod(out._shape) for out in outs):  # nothing to write into empty outputs
        kernel(*outs, *(_on(device, a) for a in args))
    return tuple(outs) if op.schema.returns_tuple else outs[0]
