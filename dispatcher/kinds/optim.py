"""Runner of the optimizers' fused steps (``_fused_adam_``, ``_fused_adamw_``, ``_fused_sgd_``).

PyTorch's checks first (every list as long as ``self``, one device and floating dtype across
the lists, one-element float32 ``grad_scale``/``found_inf`` on that device), then one kernel
call for the whole group, or the op's decomposition where the backend has no kernel. A kernel
is called with the op's arguments, the lists holding contiguous tensors (a strided tensor goes
through a contiguous copy that is written back).
"""

from __future__ import annotations

from ember._tensor import Tensor

from ._common import check_writable

# the lists the steps write (PyTorch's ``Tensor(a!)[]``); ``grads`` too when a grad_scale
# unscales them in place. A read-only tensor there (a non-writable numpy array's) is refused,
# as an in-place op refuses it, before any kernel writes.
_WRITTEN = frozenset(("self", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "momentum_buffer_list"))
_SCHEMAS: dict = {}  # op -> (lists, argument names, positions of grad_scale and found_inf)


def _schema(op) -> tuple:
    """How many leading arguments are the tensor lists (5 for Adam's, 3 for SGD's), the
    arguments' names and where ``grad_scale`` and ``found_inf`` are: read once per op."""
    found = _SCHEMAS.get(op)
    if found is None:
        names = [a.name for a in op.schema.args]
        lists = sum(1 for a in op.schema.args if a.is_tensor and a.is_list)
        found = _SCHEMAS[op] = (lists, names, [names.index(n) for n in ("grad_scale", "found_inf")])
    return found


def _check(op, lists, scalars, names) -> None:
    params = lists[0]
    first = params[0]
    device, dtype = first._storage.device, first._dtype
    written = _WRITTEN if scalars[0][1] is None else _WRITTEN | {"grads"}
    for name, tensors in zip(names, lists):
        if name in ("max_exp_avg_sqs", "momentum_buffer_list") and not tensors:
            continue  # empty when amsgrad is off / momentum is 0
        if len(tensors) != len(params):
            raise RuntimeError(
                f"{op.name}: Tensor lists must have the same number of tensors, got "
                f"{len(params)} and {len(tensors)} ('{name}')"
            )
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(f"{op.name}(): '{name}' holds a {type(t).__name__}, not a Tensor")
            found = t._storage.device
            if found is not device and found != device:
                raise RuntimeError(
                    f"{op.name}: every tensor must be on {first.device}, but '{name}' has one "
                    f"on {t.device}"
                )
            if name in written:
                check_writable(op.name, t)
    if not dtype.is_floating_point or dtype.is_complex:
        raise RuntimeError(f"\"{op.name}\" not implemented for '{dtype.name}'")
    for what, t in scalars:
        if t is not None and (t.numel() != 1 or t._storage.device != device):
            raise RuntimeError(f"{op.name}: {what} must be a 1-element tensor on {first.device}")


def fused_step(op, *args):
    n, names, where = _schema(op)
    lists = [list(a) for a in args[:n]]
    rest = args[n:]
    if not lists[0]:
        return None
    scalars = [(names[k], args[k] if k < len(args) else None) for k in where]
    _check(op, lists, scalars, names)
    first = lists[0][0]
    kernel = op.kernel(first._storage.device.type, first._dtype)
    if kernel is None:
        op.decomposition(*lists, *rest)
        return None
    packed = [[t if t._contig else t.contiguous() for t in ts] for ts in lists]
    kernel(*packed, *rest)
    for ts, done in zip(lists, packed):
        for t, d in zip(ts, done):
            if d is not t:
                t.copy_(d)
    return None
