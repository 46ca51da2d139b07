"""Which gradients are all-reduced together: PyTorch's bucket assignment, and coalesced
broadcasts (one collective per dtype instead of one per tensor).

``assign_buckets`` is c10d's ``compute_bucket_assignment_by_size``: tensors in the given order
fill one open bucket per (dtype, device); a bucket closes when its bytes reach the current
limit, and the next bucket of that key takes the next limit (the last one repeats). Without a
readiness order the buckets are sorted by their smallest index.
"""

from __future__ import annotations

import ember

MB = 1024 * 1024
DEFAULT_BUCKET_CAP_MB = 25
FIRST_BUCKET_BYTES = 1 * MB  # dist._DEFAULT_FIRST_BUCKET_BYTES


def assign_buckets(tensors, limits: list[int], order=None) -> list[list[int]]:
    """Buckets of indices into ``tensors`` (``order``: the readiness order to fill them in)."""
    indices = list(range(len(tensors))) if order is None else list(order)
    open_buckets: dict = {}
    limit_index: dict = {}
    result = []
    for i in indices:
        t = tensors[i]
        key = (t.dtype, str(t.device))
        bucket = open_buckets.setdefault(key, [[], 0])
        bucket[0].append(i)
        bucket[1] += t.numel() * t.element_size()
        position = limit_index.get(key, 0)
        if bucket[1] >= limits[position]:
            result.append(bucket[0])
            del open_buckets[key]
            limit_index[key] = min(position + 1, len(limits) - 1)
    result += [b[0] for b in open_buckets.values() if b[0]]
    if order is None:
        result.sort(key=min)
    return result


def broadcast_coalesced(tensors, src: int, group) -> None:
    """Broadcast ``tensors`` from world rank ``src``, one flat buffer per (dtype, device)."""
    from ember import distributed as dist

    by_key: dict = {}
    for t in tensors:
        by_key.setdefault((t.dtype, str(t.device)), []).append(t)
    with ember.no_grad():
        for same in by_key.values():
            flat = ember.cat([t.detach().reshape(-1) for t in same])
            dist.broadcast(flat, src=src, group=group)
            offset = 0
            for t in same:
                t.copy_(flat[offset : offset + t.numel()].reshape(t.shape))
                offset += t.numel()
