"""Collectives and point-to-point messages of picklable Python objects: each object is pickled
into a uint8 tensor, sizes travel first, then the bytes (as PyTorch does).
Unpickling runs code: trust the other ranks."""

from __future__ import annotations

import io
import pickle

import numpy as np

import ember

from ._collectives import all_gather_into_tensor, broadcast, gather, scatter
from ._launch import group_for, group_root
from ._p2p import recv, send


def _device(pg, device=None):
    """Where the byte tensors live: the CPU when the group serves it, else the current
    device of the group's first device type (NCCL groups move cuda tensors)."""
    if device is not None:
        return ember.device(device)
    if "cpu" in pg._backends:
        return ember.device("cpu")
    device_type = next(iter(pg._backends))
    return ember.device(device_type, getattr(ember, device_type).current_device())


def _pack(obj, device):
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
    return ember.from_numpy(data).to(device)


def _unpack(tensor, size: int):
    return pickle.load(io.BytesIO(tensor[:size].cpu().numpy().tobytes()))


def _gather_sizes(pg, size: int, device) -> list[int]:
    mine = ember.tensor([size], dtype=ember.int64, device=device)
    sizes = ember.zeros(pg.size(), dtype=ember.int64, device=device)
    all_gather_into_tensor(sizes, mine, group=pg)
    return [int(s) for s in sizes.cpu().tolist()]


def _padded(data, length: int, device):
    out = ember.zeros(length, dtype=ember.uint8, device=device)
    out[: data.numel()] = data
    return out


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Every rank's ``obj`` into ``object_list`` (as long as the group), in rank order."""
    pg = group_for(group, "all_gather_object")
    if pg is None:
        return
    device = _device(pg)
    data = _pack(obj, device)
    sizes = _gather_sizes(pg, data.numel(), device)
    longest = max(sizes)
    out = ember.zeros(longest * pg.size(), dtype=ember.uint8, device=device)
    all_gather_into_tensor(out, _padded(data, longest, device), group=pg)
    for i, size in enumerate(sizes):
        object_list[i] = _unpack(out[i * longest : (i + 1) * longest], size)


def broadcast_object_list(object_list: list, src=None, group=None, device=None, group_src=None):
    """Rank ``src``'s ``object_list`` into every rank's (same length everywhere), in place."""
    pg = group_for(group, "broadcast_object_list")
    if pg is None:
        return
    root = group_root(pg, src, group_src, "src")
    device = _device(pg, device)
    sizes = ember.zeros(len(object_list), dtype=ember.int64, device=device)
    if pg.rank() == root:
        packed = [_pack(obj, device) for obj in object_list]
        sizes = ember.tensor([p.numel() for p in packed], dtype=ember.int64, device=device)
    broadcast(sizes, group=pg, group_src=root)
    counts = [int(s) for s in sizes.cpu().tolist()]
    if pg.rank() == root:
        data = ember.cat(packed) if packed else ember.zeros(0, dtype=ember.uint8, device=device)
    else:
        data = ember.zeros(sum(counts), dtype=ember.uint8, device=device)
    broadcast(data, group=pg, group_src=root)
    if pg.rank() != root:
        offset = 0
        for i, count in enumerate(counts):
            object_list[i] = _unpack(data[offset : offset + count], count)
            offset += count


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Every rank's ``obj`` into ``object_gather_list`` on rank ``dst``."""
    pg = group_for(group, "gather_object")
    if pg is None:
        return
    root = group_root(pg, dst, group_dst, "dst")
    device = _device(pg)
    data = _pack(obj, device)
    sizes = _gather_sizes(pg, data.numel(), device)
    longest = max(sizes)
    on_root = pg.rank() == root
    blocks = None
    if on_root:
        blocks = [ember.zeros(longest, dtype=ember.uint8, device=device) for _ in sizes]
    gather(_padded(data, longest, device), blocks, group=pg, group_dst=root)
    if on_root:
        for i, size in enumerate(sizes):
            object_gather_list[i] = _unpack(blocks[i], size)


def scatter_object_list(
    scatter_object_output_list: list, scatter_object_input_list=None, src=None, group=None,
    group_src=None,
) -> None:  # fmt: skip
    """Rank ``src``'s ``scatter_object_input_list[i]`` into rank i's
    ``scatter_object_output_list[0]``."""
    pg = group_for(group, "scatter_object_list")
    if pg is None:
        return
    root = group_root(pg, src, group_src, "src")
    device = _device(pg)
    on_root = pg.rank() == root
    longest = ember.zeros(1, dtype=ember.int64, device=device)
    if on_root:
        packed = [_pack(obj, device) for obj in scatter_object_input_list]
        longest.fill_(max(p.numel() for p in packed))
    broadcast(longest, group=pg, group_src=root)
    length = int(longest.item())
    blocks = [_padded(p, length + 8, device) for p in packed] if on_root else None
    if on_root:  # each block ends with its true size, so one scatter carries both
        for block, p in zip(blocks, packed):
            block[length:] = ember.from_numpy(np.array([p.numel()], dtype=np.int64).view(np.uint8))
    out = ember.zeros(length + 8, dtype=ember.uint8, device=device)
    scatter(out, blocks, group=pg, group_src=root)
    size = int(np.frombuffer(out[length:].cpu().numpy().tobytes(), dtype=np.int64)[0])
    scatter_object_output_list[0] = _unpack(out, size)


def send_object_list(
    object_list: list, dst=None, group=None, device=None, group_dst=None, use_batch=False
) -> None:
    """Send the picklable objects of ``object_list`` to rank ``dst``, which receives them with
    ``recv_object_list`` into a list as long. ``use_batch`` is accepted: ember's send is
    already what a batch of one would run."""
    pg = group_for(group, "send_object_list")
    if pg is None:
        return
    device = _device(pg, device)
    tensors = [_pack(obj, device) for obj in object_list]
    sizes = ember.tensor([t.numel() for t in tensors], dtype=ember.int64, device=device)
    send(sizes, dst, pg, group_dst=group_dst)
    send(tensors[0] if len(tensors) == 1 else ember.cat(tensors), dst, pg, group_dst=group_dst)


def recv_object_list(
    object_list: list, src=None, group=None, device=None, group_src=None, use_batch=False
) -> int:
    """Fill ``object_list`` with the objects rank ``src`` (None: any rank) sent with
    ``send_object_list``; returns the sender's world rank (-1 outside the group)."""
    pg = group_for(group, "recv_object_list")
    if pg is None:
        return -1
    device = _device(pg, device)
    sizes = ember.empty(len(object_list), dtype=ember.int64, device=device)
    sender = recv(sizes, src, pg, group_src=group_src)
    if group_src is not None:
        sender = pg._ranks[group_src]
    data = ember.empty(int(sizes.sum().item()), dtype=ember.uint8, device=device)
    recv(data, sender, pg)  # from the sender of the sizes, even when any rank was allowed
    offset = 0
    for i, size in enumerate(int(s) for s in sizes.cpu().tolist()):
        object_list[i] = _unpack(data[offset : offset + size], size)
        offset += size
    return sender
