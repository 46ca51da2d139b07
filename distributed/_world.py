"""The process's distributed state: ``init_process_group``, ``new_group`` and the getters."""

from __future__ import annotations

import datetime
import os
import warnings

from ._group import GroupMember, ProcessGroup
from ._registry import Registry
from ._rendezvous import Rendezvous
from ._types import Backend, default_pg_timeout


class World:
    """Everything ``init_process_group`` set up; ``STATE.world`` is None before."""

    def __init__(self, registry, rendezvous, rank: int, size: int):
        self.registry, self.rendezvous = registry, rendezvous
        self.rank, self.size = rank, size
        self.groups: list[ProcessGroup] = []
        self.default_pg: ProcessGroup | None = None
        self.notes: dict = {}  # device type -> why its default backend was dropped
        self.pg_count = 1  # groups made, the default one included (get_pg_count)


class _State:
    world: World | None = None
    registry: Registry | None = None


STATE = _State()


def registry() -> Registry:
    if STATE.registry is None:
        STATE.registry = Registry()
    return STATE.registry


def parse_backend(backend, reg: Registry) -> tuple[dict, str, set]:
    """``({device type: backend name}, the string get_backend returns, names given explicitly)``.

    ``"mpi"`` serves every device type the plugin declares; ``"cpu:mpi,cuda:nccl"`` one each;
    None the highest-priority backend of every device type some backend serves.
    """
    if backend is None or str(backend).lower() == Backend.UNDEFINED:
        mapping = {}
        for record in reg.records().values():
            for device_type in record.info.get("device_types", ()):
                best = reg.default_for(device_type)
                if best is not None:
                    mapping[device_type] = best
        text = ",".join(f"{d}:{b}" for d, b in mapping.items())
        return mapping, text, set()
    text = str(backend).lower()
    if ":" not in text:
        record = reg.get(text)
        return dict.fromkeys(record.info["device_types"], text), text, {text}
    mapping = {}
    for part in text.split(","):
        device_type, _, name = part.partition(":")
        reg.get(name.strip())
        mapping[device_type.strip()] = name.strip()
    return mapping, text, set(mapping.values())


def _drop(mapping: dict, notes: dict, name: str, reason: str) -> None:
    for device_type in [d for d, b in mapping.items() if b == name]:
        del mapping[device_type]
        notes[device_type] = f"the default backend '{name}' is not usable here: {reason}"


def _launcher_world(mapping: dict, explicit: set, reg: Registry, notes: dict):
    """``(rank, size, backend)`` from the backend whose launcher placed this process (the
    largest world), dropping from a default mapping the backends that cannot start here."""
    found = None
    for name in dict.fromkeys(mapping.values()):
        try:
            world = reg.call(reg.get(name), "ember_collective_backend_world")
        except Exception as exc:
            if name in explicit:
                raise
            _drop(mapping, notes, name, str(exc))
            continue
        if world is not None and (found is None or world[1] > found[1]):
            found = (int(world[0]), int(world[1]), name)
    return found


def _resolve_world(rendezvous: Rendezvous, mapping: dict, explicit: set, reg, notes: dict):
    """This process's ``(rank, world size)``: the launcher's (MPI), checked against what was
    given, or the rendezvous's (``rank``/``world_size``, ``RANK``/``WORLD_SIZE``)."""
    launched = _launcher_world(mapping, explicit, reg, notes)
    rank, size = rendezvous.rank, rendezvous.world_size
    if launched is not None and (launched[1] > 1 or size in (None, 1)):
        l_rank, l_size, name = launched
        if (rank is not None and rank != l_rank) or (size is not None and size != l_size):
            raise ValueError(
                f"the '{name}' launcher placed this process as rank {l_rank} of {l_size}, but "
                f"rank={rank}, world_size={size} were given (or RANK/WORLD_SIZE say so)"
            )
        return l_rank, l_size
    if launched is not None:
        alone = (
            f"it sees this process alone (not started by MPI's launcher) but world_size is "
            f"{size}: start the ranks with `emberrun --launcher mpi --nproc-per-node {size} "
            f"script.py` or `mpirun -n {size} python script.py`"
        )
        if launched[2] in explicit:
            raise ValueError(f"backend '{launched[2]}': {alone}")
        _drop(mapping, notes, launched[2], alone)
    for name, value in (("RANK", rank), ("WORLD_SIZE", size)):
        if value is None:
            raise ValueError(
                "Error initializing ember.distributed using env:// rendezvous: environment "
                f"variable {name} expected, but not set"
            )
    if not 0 <= rank < size:
        raise ValueError(f"rank {rank} is out of range for world_size {size}")
    return rank, size


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Join the job's default process group (``torch.distributed.init_process_group``).

    Args:
        backend: ``"mpi"`` (cpu and xpu tensors; ranks started by ``emberrun`` or
            ``mpirun``), ``"nccl"`` (cuda tensors), ``"cpu:mpi,cuda:nccl"``, or None for the
            default backend of every device type.
        init_method: ``"env://"`` (default: ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
            ``MASTER_PORT``) or ``"tcp://host:port"``. Exclusive with ``store``.
        timeout: how long a collective may wait for its peers (timedelta; default 30 min),
            after which it raises ``DistBackendError``.
        world_size, rank: the job's size and this process's rank (-1: from the launcher or
            the environment; MPI's launcher decides for MPI jobs, and these must agree).
        store: a store all ranks share, for backends that need one.
        group_name, pg_options, device_id: accepted for compatibility.

    Example:
        >>> import ember.distributed as dist
        >>> dist.init_process_group("mpi")   # under `emberrun --nproc-per-node 2 script.py`
        >>> dist.get_rank(), dist.get_world_size()
    """
    if STATE.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    reg = registry()
    timeout = default_pg_timeout if timeout is None else timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {timeout}"
        )
    seconds = timeout.total_seconds()
    mapping, text, explicit = parse_backend(backend, reg)
    rendezvous = Rendezvous(init_method, rank, world_size, seconds, store)
    notes: dict = {}
    world_rank, size = _resolve_world(rendezvous, mapping, explicit, reg, notes)
    rendezvous.rank, rendezvous.world_size = world_rank, size
    world = World(reg, rendezvous, world_rank, size)
    world.notes = notes
    pg = ProcessGroup(world, list(range(size)), mapping, text, seconds, "default_pg")
    world.default_pg = pg
    world.groups.append(pg)
    STATE.world = world
    GroupMember.WORLD = pg
    if "cpu" in mapping:
        # The world's host communicator now, while every rank is here (gloo's is made at
        # PyTorch's init too): made at its first use, a first send/recv between two ranks
        # waited for the ranks that took no part (MPI_Comm_idup is collective).
        pg.communicator("cpu")


def destroy_process_group(group=None) -> None:
    """Leave ``group`` (default: all groups, and the default group: ``is_initialized()``
    becomes False)."""
    world = STATE.world
    if world is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    if group is not None and group is not world.default_pg:
        group._shutdown()
        world.groups = [g for g in world.groups if g is not group]
        return
    for pg in reversed(world.groups):
        pg._shutdown()
    world.rendezvous.close()
    STATE.world = None
    GroupMember.WORLD = None


def current() -> World:
    if STATE.world is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    return STATE.world


def resolve_group(group) -> ProcessGroup | None:
    """The ProcessGroup ``group`` names (None: the default); None for a non-member."""
    world = current()
    if group is None or group is GroupMember.WORLD:
        return world.default_pg
    if group == GroupMember.NON_GROUP_MEMBER or group.rank() < 0:
        return None
    return group


def new_group(
    ranks=None,
    timeout=None,
    backend=None,
    pg_options=None,
    use_local_synchronization: bool = False,
    group_desc=None,
    device_id=None,
):
    """A process group of ``ranks`` (world ranks; default all). Every rank of the world calls
    it, in the same order; ranks outside get ``GroupMember.NON_GROUP_MEMBER``.

    Communicators are created lazily, by the group's members only, at its first collective.
    """
    world = current()
    ranks = sorted(range(world.size) if ranks is None else {int(r) for r in ranks})
    for r in ranks:
        if not 0 <= r < world.size:
            raise ValueError(
                f"The new group's rank should be within the world_size set by "
                f"init_process_group: rank {r}, world_size {world.size}"
            )
    if backend is None:
        mapping, text = world.default_pg._backends, world.default_pg._backend_str
    else:
        mapping, text, _ = parse_backend(backend, world.registry)
    seconds = world.default_pg._timeout if timeout is None else timeout.total_seconds()
    pg = ProcessGroup(world, ranks, mapping, text, seconds, f"group{len(world.groups)}")
    world.groups.append(pg)
    world.pg_count += 1
    if world.rank not in ranks:
        return GroupMember.NON_GROUP_MEMBER
    return pg


def get_pg_count() -> int:
    """How many process groups this process has made, the default one included (0 before
    ``init_process_group`` and after destroying the default group)."""
    return 0 if STATE.world is None else STATE.world.pg_count


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its machine: ``LOCAL_RANK`` (set by emberrun and torchrun),
    else ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
        "and want the code to run locally instead."
    )


def is_initialized() -> bool:
    return STATE.world is not None


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (default: the world); -1 outside the group."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (default: the world); -1 outside the group."""
    pg = resolve_group(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None) -> str:
    """The backend string of ``group`` (``"mpi"``, or ``"cpu:mpi,cuda:nccl"`` by default)."""
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg._backend_str)


def get_process_group_ranks(group) -> list[int]:
    """The world ranks of ``group``'s members, in group order."""
    pg = resolve_group(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg._ranks)


def get_global_rank(group, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def warn_non_member(op: str) -> None:
    warnings.warn(
        f"Running {op} on global rank {current().rank} which does not belong to the given group.",
        stacklevel=3,
    )
