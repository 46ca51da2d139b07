"""One caching allocator for every device, over a backend's raw ``alloc``/``free``.

Segments come from the backend and are split into blocks; a freed block goes back to a
size-ordered free list (best fit, split on reuse, merged with free neighbours) instead of to the
device, so steady training loops stop calling the driver.

Merging is lazy: a freed block is first parked under its exact size, and a request of that size
takes it back without touching the free lists (the common case: a loop frees and reallocates the
same shapes every step, and bisecting the lists cost more than the rest of a small op). A
request of another size up to ``SMALL_LIMIT`` takes the best fit in the merged lists and merges
the parked blocks only when nothing there fits (so a new segment is made only when merged free
memory has no room); a larger request merges every parked block first, so its best fit sees the
same merged free memory as with eager merging.

Releases arrive from ``__del__`` of leases at arbitrary points (garbage collection can run inside
``alloc``), so they are only queued there and folded in by the next call that holds the lock: a
native or finaliser path never re-enters the free lists.
"""

from __future__ import annotations

import bisect
import threading
from collections import deque

KB = 1024
MB = 1024 * KB
SMALL_LIMIT = 1 * MB  # requests up to this share small segments
SMALL_SEGMENT = 2 * MB
LARGE_ROUND = 2 * MB
ALIGN = 512  # every block starts on this boundary (enough for any dtype and vector loads)
MIN_SPLIT_REMAINDER = {True: ALIGN, False: 1 * MB}  # keyed by "is small pool"


class OutOfMemoryError(RuntimeError):
    """The device has no memory left for an allocation, even after emptying the cache."""


class Segment:
    __slots__ = ("handle", "size", "small")

    def __init__(self, handle, size: int, small: bool):
        self.handle = handle
        self.size = size
        self.small = small


class Block:
    __slots__ = ("free", "next", "offset", "prev", "requested", "segment", "size")

    def __init__(self, segment: Segment, offset: int, size: int):
        self.segment = segment
        self.offset = offset
        self.size = size
        self.requested = 0
        self.free = True
        self.prev = None
        self.next = None

    def key(self):
        return (self.size, id(self.segment), self.offset)


class Lease:
    """Held by a Storage; returns its block to the allocator when the storage dies."""

    __slots__ = ("allocator", "block")

    def __init__(self, allocator: CachingAllocator, block: Block):
        self.allocator = allocator
        self.block = block

    def __del__(self):
        # Only a deque append: safe from any finaliser, even one running inside alloc().
        self.allocator.pending.append(self.block)


class _Pool:
    __slots__ = ("blocks", "keys")

    def __init__(self):
        self.keys: list = []
        self.blocks: dict = {}

    def add(self, block: Block) -> None:
        key = block.key()
        bisect.insort(self.keys, key)
        self.blocks[key] = block

    def remove(self, block: Block) -> None:
        key = block.key()
        index = bisect.bisect_left(self.keys, key)
        del self.keys[index]
        del self.blocks[key]

    def best_fit(self, size: int):
        index = bisect.bisect_left(self.keys, (size, -1, -1))
        if index == len(self.keys):
            return None
        return self.blocks[self.keys[index]]


STAT_NAMES = ("allocated_bytes", "reserved_bytes", "active_blocks", "segments", "requested_bytes")
IN_USE_STATS = ("allocated_bytes", "requested_bytes", "active_blocks")  # what allocate changes


class CachingAllocator:
    """Caches device memory for one device of one backend.

    Args:
        raw_alloc: ``nbytes -> handle``; raises MemoryError when the device is full.
        raw_free: ``handle -> None``.
        name: shown in ``memory_summary`` (for example ``"cuda:0"``).
    """

    def __init__(self, raw_alloc, raw_free, name: str):
        self.raw_alloc = raw_alloc
        self.raw_free = raw_free
        self.name = name
        self.pending: deque = deque()
        self.lock = threading.Lock()
        self.pools = {True: _Pool(), False: _Pool()}
        self.parked: dict = {}  # size -> freed blocks not merged yet (still marked in use)
        self.segments: list[Segment] = []
        self.current = dict.fromkeys(STAT_NAMES, 0)
        self.peak = dict.fromkeys(STAT_NAMES, 0)
        self.counts = {"alloc_requests": 0, "segment_allocs": 0, "segment_frees": 0, "ooms": 0}

    # ---- public -------------------------------------------------------------------------------
    def allocate(self, nbytes: int):
        """Return ``(segment handle, byte offset, lease)`` for at least ``nbytes`` bytes."""
        size = -(-nbytes // ALIGN) * ALIGN or ALIGN
        with self.lock:
            if self.pending:
                self._drain()
            parked = self.parked.get(size)
            block = parked.pop() if parked else self._carve(size)
            block.requested = nbytes
            # The stats, written out: this runs for every op's output on a device.
            current, peak = self.current, self.peak
            current["allocated_bytes"] += block.size
            current["requested_bytes"] += nbytes
            current["active_blocks"] += 1
            self.counts["alloc_requests"] += 1
            for name in IN_USE_STATS:  # peaks only rise here
                if current[name] > peak[name]:
                    peak[name] = current[name]
        return block.segment.handle, block.offset, Lease(self, block)

    def empty_cache(self) -> None:
        """Give every wholly free segment back to the device."""
        with self.lock:
            self._drain()
            self._unpark()
            self._release_free_segments()

    def stats(self) -> dict:
        """Current and peak figures, like ``torch.cuda.memory_stats`` (flat keys)."""
        with self.lock:
            self._drain()
            out = {f"{name}.current": self.current[name] for name in STAT_NAMES}
            out.update({f"{name}.peak": self.peak[name] for name in STAT_NAMES})
            out.update(self.counts)
            return out

    def reset_peak_stats(self) -> None:
        with self.lock:
            self._drain()
            self.peak = dict(self.current)

    def memory_summary(self) -> str:
        """A table of current and peak usage, for people."""
        stats = self.stats()
        rows = [
            ("Allocated memory", "allocated_bytes"),
            ("Reserved memory", "reserved_bytes"),
            ("Requested memory", "requested_bytes"),
            ("Active blocks", "active_blocks"),
            ("Segments", "segments"),
        ]
        width = 64
        lines = [
            "=" * width,
            f" ember memory summary, device {self.name}".ljust(width),
            "-" * width,
        ]
        lines.append(f" {'Metric':<28}{'Current':>17}{'Peak':>17}")
        lines.append("-" * width)
        for label, key in rows:
            cur, peak = stats[f"{key}.current"], stats[f"{key}.peak"]
            if key.endswith("bytes"):
                cur, peak = _human(cur), _human(peak)
            lines.append(f" {label:<28}{cur!s:>17}{peak!s:>17}")
        lines.append("-" * width)
        counts = ", ".join(f"{k}={v}" for k, v in self.counts.items())
        lines.append(f" {counts}")
        lines.append("=" * width)
        return "\n".join(lines)

    # ---- internals (lock held) ----------------------------------------------------------------
    def _carve(self, size: int) -> Block:
        """A block of ``size`` bytes from the merged free lists, or from a new segment.

        A small request takes merged free memory first and merges the parked blocks only when
        none fits: merging on every request of a new size unparked each step's blocks again
        before their sizes came back (minGPT's step: 73 merges of 99 cached requests, 0 now).
        A large one merges them first, as a fit without them split big holes (the CNN's
        reserved memory went from 28 to 48 MiB when large requests did the same)."""
        small = size <= SMALL_LIMIT
        pool = self.pools[small]
        if not small:
            self._unpark()
        block = pool.best_fit(size)
        if block is None and self.parked:
            self._unpark()
            block = pool.best_fit(size)
        if block is None:
            block = self._new_segment(size, small)
        else:
            pool.remove(block)
        self._split(block, size, small)
        block.free = False
        return block

    def _bump(self, name: str, delta: int) -> None:
        value = self.current[name] + delta
        self.current[name] = value
        if value > self.peak[name]:
            self.peak[name] = value

    def _new_segment(self, size: int, small: bool) -> Block:
        seg_size = SMALL_SEGMENT if small else -(-size // LARGE_ROUND) * LARGE_ROUND
        try:
            handle = self.raw_alloc(seg_size)
        except MemoryError:
            # Free what the cache holds and try once more before giving up.
            self._release_free_segments()
            try:
                handle = self.raw_alloc(seg_size)
            except MemoryError as exc:
                self.counts["ooms"] += 1
                raise OutOfMemoryError(
                    f"{self.name} out of memory: tried to allocate {_human(size)}; "
                    f"{_human(self.current['allocated_bytes'])} allocated, "
                    f"{_human(self.current['reserved_bytes'])} reserved by ember"
                ) from exc
        segment = Segment(handle, seg_size, small)
        self.segments.append(segment)
        self.counts["segment_allocs"] += 1
        self._bump("reserved_bytes", seg_size)
        self._bump("segments", 1)
        return Block(segment, 0, seg_size)

    def _split(self, block: Block, size: int, small: bool) -> None:
        remainder = block.size - size
        if remainder < MIN_SPLIT_REMAINDER[small]:
            return
        rest = Block(block.segment, block.offset + size, remainder)
        rest.prev = block
        rest.next = block.next
        if block.next is not None:
            block.next.prev = rest
        block.next = rest
        block.size = size
        self.pools[small].add(rest)

    def _drain(self) -> None:
        pending, parked = self.pending, self.parked
        current = self.current
        while pending:
            block = pending.popleft()
            current["allocated_bytes"] -= block.size
            current["requested_bytes"] -= block.requested
            current["active_blocks"] -= 1
            found = parked.get(block.size)
            if found is None:
                parked[block.size] = [block]
            else:
                found.append(block)

    def _unpark(self) -> None:
        """Merge every parked block into the free lists."""
        parked = self.parked
        if not parked:
            return
        for blocks in parked.values():
            for block in blocks:
                self._free_block(block)
        parked.clear()

    def _free_block(self, block: Block) -> None:
        pool = self.pools[block.segment.small]
        block.free = True
        for neighbour in (block.prev, block.next):
            if neighbour is not None and neighbour.free:
                pool.remove(neighbour)
                self._merge(block, neighbour)
        pool.add(block)

    @staticmethod
    def _merge(block: Block, neighbour: Block) -> None:
        if neighbour is block.prev:
            block.offset = neighbour.offset
            block.prev = neighbour.prev
            if neighbour.prev is not None:
                neighbour.prev.next = block
        else:
            block.next = neighbour.next
            if neighbour.next is not None:
                neighbour.next.prev = block
        block.size += neighbour.size

    def _release_free_segments(self) -> None:
        for pool in self.pools.values():
            for key in list(pool.keys):
                block = pool.blocks[key]
                if block.prev is None and block.next is None:
                    pool.remove(block)
                    self.segments.remove(block.segment)
                    self.raw_free(block.segment.handle)
                    self.counts["segment_frees"] += 1
                    self._bump("reserved_bytes", -block.segment.size)
                    self._bump("segments", -1)


def _human(nbytes: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(nbytes) < 1024 or unit == "GiB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.2f} {unit}"
        nbytes /= 1024
    return str(nbytes)
