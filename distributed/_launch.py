"""Running one collective: find the group and device, stage the tensors, start it, wait or not.

Shared by the collective, point-to-point and object functions, so each of those only says
which buffers go where.
"""

from __future__ import annotations

import ember

from . import _debug
from ._buffers import Staged
from ._errors import DistBackendError
from ._work import Work
from ._world import current, resolve_group, warn_non_member


def group_for(group, op: str):
    """The ProcessGroup to run ``op`` in; None (with PyTorch's warning) for a non-member."""
    pg = resolve_group(group)
    if pg is None:
        warn_non_member(op)
    return pg


def check_tensor(tensor, name: str) -> None:
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type ember.Tensor "
            f"but got {type(tensor)} instead."
        )


def check_tensor_list(tensors, name: str) -> None:
    if not isinstance(tensors, (list, tuple)) or not all(
        isinstance(t, ember.Tensor) for t in tensors
    ):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type List[ember.Tensor]"
        )


def device_type_of(tensors, op: str) -> str:
    types = {t.device.type for t in tensors}
    if len(types) != 1:
        raise ValueError(f"{op}: all tensors must be on one device type, got {sorted(types)}")
    return types.pop()


def check_blocks(op: str, tensors, like, count: int, name: str) -> None:
    """``tensors`` is a list of ``count`` tensors of ``like``'s dtype and element count."""
    if len(tensors) != count:
        raise ValueError(f"{op}: {name} needs one tensor per rank ({count}), got {len(tensors)}")
    for i, t in enumerate(tensors):
        if t.dtype != like.dtype or t.numel() != like.numel():
            raise ValueError(
                f"{op}: {name}[{i}] is {t.dtype} with {t.numel()} elements; every tensor must "
                f"match the input ({like.dtype}, {like.numel()} elements)"
            )


def check_root_list(op: str, pg, root: int, tensors, like, name: str, role: str) -> None:
    """A gather's or scatter's list: one tensor per rank on the root, nothing elsewhere."""
    if pg.rank() == root:
        check_tensor_list(tensors, name)
        check_blocks(op, tensors, like, pg.size(), name)
    elif tensors:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")


def group_root(pg, rank, group_rank, name: str) -> int:
    """The group rank of a ``src``/``dst`` given as a world rank or a group rank."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both group_{name} and {name}")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    rank = 0 if rank is None else rank
    if rank not in pg._ranks:
        raise ValueError(f"The global rank {rank} is not part of the group {pg}")
    return pg._ranks.index(rank)


def launch(pg, op: str, tensors, start, async_op: bool, result=(), meta=None):
    """Run ``start(comm, memory) -> (request or list of requests, finish or None)``.

    ``meta`` (tensors that describe the call: dtype, shape) feeds the cross-rank check of
    ``EMBER_DISTRIBUTED_DEBUG=DETAIL``. Returns a Work when ``async_op``, else None after it
    finished.
    """
    device_type = device_type_of(tensors, op)
    comm, memory = pg.communicator(device_type)
    _debug.check(pg, comm, op, tensors if meta is None else meta)
    try:
        requests, finish = start(comm, memory)
    except (TypeError, ValueError):
        raise
    except Exception as exc:
        raise DistBackendError(f"{op} on {pg.group_name} failed to start: {exc}") from exc
    requests = requests if isinstance(requests, list) else [requests]
    work = Work(pg, op, requests, finish, result)
    if async_op:
        return work
    work.wait()
    return None


def staged(tensor, memory: str, read_only: bool = False) -> Staged:
    return Staged(tensor, memory, read_only)


def flat_like(tensor, count: int):
    """A contiguous tensor of ``count`` times ``tensor``'s elements, on its device."""
    return ember.empty(count * tensor.numel(), dtype=tensor.dtype, device=tensor.device)


def copy_blocks(flat, tensors) -> None:
    """Copy consecutive blocks of ``flat`` into ``tensors``."""
    offset = 0
    with ember.no_grad():
        for t in tensors:
            n = t.numel()
            t.copy_(flat[offset : offset + n].reshape(t.shape))
            offset += n


def concat(tensors):
    return ember.cat([t.detach().reshape(-1) for t in tensors])


def world_rank() -> int:
    return current().rank
