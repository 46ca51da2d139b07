"""``ProcessGroup``: a set of ranks and, per tensor device type, the communicator they use."""

from __future__ import annotations

import contextlib
import itertools

from ._errors import DistBackendError
from ._store import PrefixStore


class ProcessGroup:
    """The ranks that run collectives together (``torch.distributed.ProcessGroup``).

    Made by ``init_process_group`` (the world) and ``new_group``. Communicators are created the
    first time the group runs a collective on tensors of a device type, by the backend the
    group's backend string names for it (``{"cpu": "mpi", "cuda": "nccl"}``).
    """

    def __init__(self, world, ranks: list[int], backends: dict, backend_str: str, timeout, name):
        self._world = world
        self._ranks = list(ranks)
        self._world_rank = world.rank
        self._rank = self._ranks.index(world.rank) if world.rank in self._ranks else -1
        self._backends = dict(backends)
        self._backend_str = backend_str
        self._timeout = float(timeout)
        self.group_name = name
        self._comms: dict = {}
        self._broken: Exception | None = None
        self._sequence = itertools.count(1)

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return self._backend_str

    def _next_sequence(self) -> int:
        return next(self._sequence)

    def __repr__(self) -> str:
        return f"<ember.distributed.ProcessGroup {self.group_name} ranks={self._ranks}>"

    def communicator(self, device_type: str):
        """``(communicator, memory)`` for tensors of ``device_type``, created on first use."""
        if self._broken is not None:
            raise DistBackendError(
                f"process group {self.group_name} is unusable after an earlier failure: "
                f"{self._broken}"
            )
        entry = self._comms.get(device_type)
        if entry is None:
            entry = self._comms[device_type] = self._create(device_type)
        return entry

    def _create(self, device_type: str):
        name = self._backends.get(device_type)
        if name is None:
            served = ", ".join(f"{d}:{b}" for d, b in self._backends.items()) or "nothing"
            why = self._world.notes.get(device_type)
            raise RuntimeError(
                f"No backend type associated with device type {device_type} in process group "
                f"{self.group_name} (its backends: {served})"
                + (f"; {why}" if why else f"; pass backend='{device_type}:<backend>'")
            )
        registry = self._world.registry
        record = registry.get(name)
        store = None
        if record.info.get("needs_store"):
            prefix = f"{self.group_name}/{device_type}"
            store = PrefixStore(prefix, self._world.rendezvous.store(name))
        options = {
            "rank": self._rank,
            "world_size": self.size(),
            "global_ranks": list(self._ranks),
            "store": store,
            "timeout": self._timeout,
            "device_type": device_type,
            "device_index": _current_device(device_type),
            "group_name": self.group_name,
        }
        try:
            comm = registry.call(record, "ember_collective_backend_create", options=options)
        except Exception as exc:
            raise DistBackendError(
                f"the '{name}' backend could not create a communicator for {device_type} tensors "
                f"in {self.group_name}: {exc}"
            ) from exc
        return comm, record.info.get("memory", "host")

    def _shutdown(self) -> None:
        for comm, _memory in self._comms.values():
            # Shutting down: a communicator that a failure left behind may not close.
            with contextlib.suppress(Exception):
                comm.close()
        self._comms.clear()


def _current_device(device_type: str) -> int | None:
    """The current device of ``device_type`` (None for the CPU), where a communicator lives."""
    if device_type == "cpu":
        return None
    import ember

    module = getattr(ember, device_type, None)
    try:
        return module.current_device()
    except Exception:  # a device type without a runtime that tracks a current device
        return None


class GroupMember:
    """``GroupMember.WORLD`` is the default group; ``NON_GROUP_MEMBER`` what ``new_group``
    returns to ranks outside the new group."""

    WORLD = None
    NON_GROUP_MEMBER = -100


class _GroupNamespace:
    """``ember.distributed.group.WORLD``: the default group once initialised."""

    @property
    def WORLD(self):  # noqa: N802 - PyTorch's name
        return GroupMember.WORLD


group = _GroupNamespace()
