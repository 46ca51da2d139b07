"""Point-to-point messages and barriers: ``send``/``recv``/``isend``/``irecv``, ``barrier``,
``monitored_barrier``."""

from __future__ import annotations

import datetime
import time

import ember

from ._errors import DistBackendError
from ._launch import check_tensor, group_for, group_root, launch, staged
from ._work import Work

_MONITOR_TAG = 32767  # the largest tag every MPI allows; user tags stay below it


def _peer(pg, rank, group_rank, name: str) -> int:
    peer = group_root(pg, rank, group_rank, name)
    if peer == pg.rank():
        kind = "destination" if name == "dst" else "source"
        raise ValueError(
            f"Invalid {kind} rank: should not be the same as the rank of the current process."
        )
    return peer


def isend(tensor, dst=None, group=None, tag: int = 0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a Work (None outside the group)."""
    check_tensor(tensor, "tensor")
    pg = group_for(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")

    def start(comm, memory):
        return comm.send(staged(tensor, memory, read_only=True).buffer, peer, tag), None

    return launch(pg, "send", [tensor], start, True, [tensor])


def irecv(tensor, src=None, group=None, tag: int = 0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank); returns a Work."""
    check_tensor(tensor, "tensor")
    pg = group_for(group, "irecv")
    if pg is None:
        return None
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "src")

    def start(comm, memory):
        buf = staged(tensor, memory)
        return comm.recv(buf.buffer, peer, tag), buf.writeback

    return launch(pg, "recv", [tensor], start, True, [tensor])


def send(tensor, dst=None, group=None, tag: int = 0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag: int = 0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (None: any); returns the sender's rank (-1
    outside the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = work._group
    return pg._ranks[work.source_rank()] if group_src is None else work.source_rank()


class P2POp:
    """One send or receive for ``batch_isend_irecv``: ``op`` is ``isend`` or ``irecv``."""

    def __init__(self, op, tensor, peer=None, group=None, tag: int = 0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``ember.distributed.isend`` or "
                "``ember.distributed.irecv``."
            )
        self.op, self.tensor, self.peer, self.group = op, tensor, peer, group
        self.tag, self.group_peer = tag, group_peer


def batch_isend_irecv(p2p_op_list: list) -> list:
    """Start every send and receive of ``p2p_op_list``; returns their Works (PyTorch's order).

    MPI matches messages by peer and tag, so the order of the list need not match across ranks.
    """
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to be of type P2POp.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works


def barrier(group=None, async_op: bool = False, device_ids=None, timeout=None):
    """Wait until every rank of the group has entered the barrier (``timeout``, a timedelta,
    overrides the group's)."""
    pg = group_for(group, "barrier")
    if pg is None:
        return None
    device_type = "cpu" if "cpu" in pg._backends else next(iter(pg._backends), "cpu")
    comm, _memory = pg.communicator(device_type)
    work = Work(pg, "barrier", [comm.barrier()])
    if async_op:
        return work
    work.wait(timeout)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not arrive within ``timeout``.

    Rank 0 waits for a message from every other rank, then answers each; a rank missing after
    ``timeout`` (default: the group's) makes rank 0 raise with its number (every missing rank's
    with ``wait_all_ranks``), and the others time out waiting for the answer.
    """
    pg = group_for(group, "monitored_barrier")
    if pg is None:
        return
    seconds = pg._timeout if timeout is None else timeout.total_seconds()
    comm, _memory = pg.communicator("cpu")
    token = ember.zeros(1, dtype=ember.uint8)
    buffer = staged(token, "host").buffer
    if pg.rank() != 0:
        limit = datetime.timedelta(seconds=seconds)
        Work(pg, "monitored_barrier", [comm.send(buffer, 0, _MONITOR_TAG)]).wait(limit)
        # Longer than rank 0's wait, so that rank 0's report of who is missing comes first.
        answer = [comm.recv(buffer, 0, _MONITOR_TAG)]
        Work(pg, "monitored_barrier", answer).wait(2 * limit + datetime.timedelta(seconds=1))
        return
    pending = {r: comm.recv(buffer.copy(), r, _MONITOR_TAG) for r in range(1, pg.size())}
    deadline = time.monotonic() + seconds
    missing = []
    for rank, request in pending.items():
        if not request.wait(max(deadline - time.monotonic(), 0.0)):
            missing.append(pg._ranks[rank])
            if not wait_all_ranks:
                break
    if missing:
        error = DistBackendError(_missing_message(missing, seconds, wait_all_ranks))
        pg._broken = error
        raise error
    acks = [comm.send(buffer, r, _MONITOR_TAG) for r in range(1, pg.size())]
    Work(pg, "monitored_barrier", acks).wait(datetime.timedelta(seconds=seconds))


def _missing_message(missing: list, seconds: float, all_ranks: bool) -> str:
    ms = f"{seconds * 1000:.0f} ms"
    if all_ranks:
        return f"Ranks {', '.join(map(str, missing))} failed to pass monitoredBarrier in {ms}"
    return f"Rank {missing[0]} failed to pass monitoredBarrier in {ms}"
