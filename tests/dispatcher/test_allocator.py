"""The caching allocator over a fake device's raw alloc/free."""

from __future__ import annotations

import gc

import pytest

import ember
from ember.dispatcher import allocator as alloc_mod
from ember.dispatcher.allocator import (
    ALIGN,
    KB,
    MB,
    SMALL_SEGMENT,
    CachingAllocator,
    OutOfMemoryError,
)
from ember.dispatcher.devices import REGISTRY


class FakeDevice:
    """Raw fake-device memory: numbered handles, an optional capacity, a log of calls."""

    def __init__(self, capacity: int | None = None):
        self.capacity = capacity
        self.live: dict = {}
        self.calls: list = []
        self.count = 0
        self.during_alloc = None  # called inside alloc(), like a garbage collection would be

    def alloc(self, nbytes: int):
        self.calls.append(("alloc", nbytes))
        if self.during_alloc is not None:
            self.during_alloc()
        if self.capacity is not None and sum(self.live.values()) + nbytes > self.capacity:
            raise MemoryError(f"fake device: no room for {nbytes} bytes")
        self.count += 1
        handle = f"seg{self.count}"
        self.live[handle] = nbytes
        return handle

    def free(self, handle) -> None:
        self.calls.append(("free", handle))
        del self.live[handle]

    def allocator(self) -> CachingAllocator:
        return CachingAllocator(self.alloc, self.free, "fake:0")

    def raw_allocs(self) -> list:
        return [n for call, n in self.calls if call == "alloc"]


@pytest.fixture
def fake_device():
    return FakeDevice()


def test_freed_block_is_reused(fake_device):
    cache = fake_device.allocator()
    handle, offset, lease = cache.allocate(1000)
    del lease
    again = cache.allocate(1000)
    assert again[:2] == (handle, offset)
    assert fake_device.raw_allocs() == [SMALL_SEGMENT]


def test_small_requests_share_a_segment_at_aligned_offsets(fake_device):
    cache = fake_device.allocator()
    got = [cache.allocate(n) for n in (1, 700, 100 * KB, 0)]
    assert {h for h, _, _ in got} == {"seg1"}
    assert [o for _, o, _ in got] == [0, ALIGN, 3 * ALIGN, 3 * ALIGN + 100 * KB]
    assert fake_device.raw_allocs() == [SMALL_SEGMENT]


def test_small_and_large_pools_are_separate(fake_device):
    cache = fake_device.allocator()
    small = cache.allocate(1 * MB)  # the largest small request
    del small
    large = cache.allocate(1 * MB + 1)  # the free 2 MiB small block does not serve it
    assert large[0] == "seg2"
    assert fake_device.raw_allocs() == [SMALL_SEGMENT, 2 * MB]
    cache.allocate(5 * MB)
    assert fake_device.raw_allocs()[-1] == 6 * MB  # large segments round up to 2 MiB


def _fill(cache, nbytes: int) -> list:
    """Leases of ``nbytes`` in small requests (at most SMALL_LIMIT each)."""
    sizes = [alloc_mod.SMALL_LIMIT] * (nbytes // alloc_mod.SMALL_LIMIT)
    return [cache.allocate(n) for n in sizes + [nbytes % alloc_mod.SMALL_LIMIT] if n]


def test_best_fit_and_splitting(fake_device):
    cache = fake_device.allocator()
    sizes = (4 * KB, ALIGN, 16 * KB, ALIGN, 8 * KB, ALIGN)
    leases = [cache.allocate(n) for n in sizes]
    offsets = [o for _, o, _ in leases]
    tail = _fill(cache, SMALL_SEGMENT - sum(sizes))  # the rest of the segment, in use
    # Free the 4, 16 and 8 KiB blocks; the separators keep them from merging. They are parked:
    # the first request of another size finds no merged free memory, so it merges them.
    leases[0] = leases[2] = leases[4] = None
    picked = cache.allocate(6 * KB)  # smallest free block that fits: the 8 KiB one
    assert picked[1] == offsets[4]
    rest = cache.allocate(2 * KB)  # its split-off remainder is now the best fit
    assert rest[1] == offsets[4] + 6 * KB
    assert cache.allocate(3 * KB)[1] == offsets[0]
    assert cache.allocate(16 * KB)[1] == offsets[2]
    assert fake_device.raw_allocs() == [SMALL_SEGMENT]
    del tail


def test_large_blocks_split_only_big_remainders(fake_device):
    cache = fake_device.allocator()
    first = cache.allocate(5 * MB // 2)  # 4 MiB segment: the 1.5 MiB remainder is split off
    assert cache.stats()["allocated_bytes.current"] == 5 * MB // 2
    second = cache.allocate(5 * MB // 4)  # served by the remainder, whose 0.25 MiB stays attached
    assert second[:2] == ("seg1", 5 * MB // 2)
    assert cache.stats()["allocated_bytes.current"] == 4 * MB
    assert fake_device.raw_allocs() == [4 * MB]
    del first, second


def test_free_neighbours_merge(fake_device):
    cache = fake_device.allocator()
    a, b, c = (cache.allocate(64 * KB) for _ in range(3))
    keep = _fill(cache, SMALL_SEGMENT - 192 * KB)  # the rest of the segment stays in use
    del a, c
    del b  # merges with both neighbours
    merged = cache.allocate(192 * KB)
    assert merged[:2] == ("seg1", 0)
    del merged, keep
    cache.empty_cache()  # everything merged back into one free segment, which goes
    assert fake_device.live == {}
    assert cache.stats()["segments.current"] == 0


def test_freed_block_of_the_same_size_comes_back_without_merging(fake_device):
    cache = fake_device.allocator()
    a = cache.allocate(64 * KB)
    offset = a[1]
    del a
    assert cache.stats()["active_blocks.current"] == 0  # freed for the stats at once...
    assert cache.parked == {64 * KB: [cache.parked[64 * KB][0]]}  # ...but parked, not merged
    again = cache.allocate(64 * KB - 100)  # rounds to the parked size: taken back as it is
    assert again[1] == offset
    assert cache.parked == {64 * KB: []}
    assert cache.stats()["requested_bytes.current"] == 64 * KB - 100
    del again
    other = cache.allocate(32 * KB)  # another small size: the free tail serves it...
    assert other[1] == offset + 64 * KB
    assert cache.parked == {64 * KB: [cache.parked[64 * KB][0]]}  # ...and the block stays parked
    cache.allocate(SMALL_SEGMENT)  # nothing merged fits: the parked block merges first
    assert cache.parked == {}


def test_large_requests_merge_parked_blocks_first(fake_device):
    cache = fake_device.allocator()
    small = cache.allocate(64 * KB)
    del small
    cache.stats()  # folds the release in: the block is parked
    assert cache.parked == {64 * KB: [cache.parked[64 * KB][0]]}
    cache.allocate(3 * MB)  # a large size: every parked block merges before its best fit
    assert cache.parked == {}


def test_parked_blocks_merge_before_the_device_is_asked_for_more():
    fake_device = FakeDevice(capacity=4 * MB)
    cache = fake_device.allocator()
    halves = [cache.allocate(1 * MB) for _ in range(2)]  # fill the one small segment
    del halves  # both parked, each 1 MiB
    whole = cache.allocate(1 * MB - ALIGN)  # another size: unpark, merge, best fit in seg1
    assert whole[0] == "seg1" and whole[1] == 0
    assert fake_device.raw_allocs() == [SMALL_SEGMENT]
    del whole
    cache.allocate(3 * MB)  # no room next to seg1, whose parked block merges: seg1 goes, it fits
    assert fake_device.calls[-3:] == [("alloc", 4 * MB), ("free", "seg1"), ("alloc", 4 * MB)]


def test_stats_current_peak_and_reset(fake_device):
    cache = fake_device.allocator()
    a = cache.allocate(1000)
    b = cache.allocate(3 * MB)
    stats = cache.stats()
    assert stats["allocated_bytes.current"] == 1024 + 3 * MB
    assert stats["requested_bytes.current"] == 1000 + 3 * MB
    assert stats["reserved_bytes.current"] == SMALL_SEGMENT + 4 * MB
    assert stats["active_blocks.current"] == 2
    assert stats["segments.current"] == 2
    assert stats["alloc_requests"] == 2 and stats["segment_allocs"] == 2
    del b
    stats = cache.stats()
    assert stats["allocated_bytes.current"] == 1024
    assert stats["allocated_bytes.peak"] == 1024 + 3 * MB
    assert stats["reserved_bytes.current"] == SMALL_SEGMENT + 4 * MB  # cached, not released
    cache.reset_peak_stats()
    stats = cache.stats()
    assert stats["allocated_bytes.peak"] == 1024
    assert stats["active_blocks.peak"] == 1
    del a


def test_memory_summary(fake_device):
    cache = fake_device.allocator()
    lease = cache.allocate(3 * MB)
    del lease
    text = cache.memory_summary()
    assert "device fake:0" in text
    lines = {line.split("  ")[0].strip(): line.split() for line in text.splitlines()}
    assert lines["Allocated memory"][-4:] == ["0", "B", "3.00", "MiB"]
    assert lines["Reserved memory"][-4:] == ["4.00", "MiB", "4.00", "MiB"]
    assert "alloc_requests=1, segment_allocs=1, segment_frees=0, ooms=0" in text


def test_empty_cache_releases_only_wholly_free_segments(fake_device):
    cache = fake_device.allocator()
    small_used = cache.allocate(10 * KB)
    small_freed = cache.allocate(10 * KB)
    large_used = cache.allocate(2 * MB)
    large_freed = cache.allocate(4 * MB)
    del small_freed, large_freed
    cache.empty_cache()
    assert ("free", "seg3") in fake_device.calls
    assert set(fake_device.live) == {"seg1", "seg2"}
    stats = cache.stats()
    assert stats["reserved_bytes.current"] == SMALL_SEGMENT + 2 * MB
    assert stats["segment_frees"] == 1
    del small_used, large_used
    cache.empty_cache()
    assert fake_device.live == {}
    assert cache.stats()["reserved_bytes.current"] == 0


def test_out_of_memory_frees_the_cache_and_retries_once():
    fake_device = FakeDevice(capacity=8 * MB)
    cache = fake_device.allocator()
    cached = cache.allocate(4 * MB)
    del cached  # 4 MiB reserved, unused
    big = cache.allocate(6 * MB)  # does not fit next to the cached segment: release, retry
    assert fake_device.calls == [
        ("alloc", 4 * MB),
        ("alloc", 6 * MB),
        ("free", "seg1"),
        ("alloc", 6 * MB),
    ]
    assert big[0] == "seg2"
    fake_device.calls.clear()
    with pytest.raises(OutOfMemoryError) as info:
        cache.allocate(4 * MB)
    assert fake_device.calls == [("alloc", 4 * MB), ("alloc", 4 * MB)]  # one retry, then give up
    assert str(info.value) == (
        "fake:0 out of memory: tried to allocate 4.00 MiB; 6.00 MiB allocated, "
        "6.00 MiB reserved by ember"
    )
    assert isinstance(info.value.__cause__, MemoryError)
    assert isinstance(info.value, RuntimeError)
    stats = cache.stats()
    assert stats["ooms"] == 1
    assert stats["allocated_bytes.current"] == 6 * MB  # nothing leaked by the failure
    del big


def test_releases_from_finalisers_are_queued(fake_device):
    cache = fake_device.allocator()
    lease = cache.allocate(1000)
    del lease
    assert len(cache.pending) == 1  # __del__ only queued the block
    assert cache.current["allocated_bytes"] == 1024
    assert cache.stats()["allocated_bytes.current"] == 0  # the next call folds it in
    assert not cache.pending


def test_release_during_raw_alloc_does_not_reenter(fake_device):
    """A finaliser running inside alloc() (garbage collection) finds the lock held."""
    cache = fake_device.allocator()
    doomed = [cache.allocate(1000)]
    fake_device.during_alloc = doomed.clear
    big = cache.allocate(3 * MB)  # needs a new segment: the fake drops the lease inside alloc()
    fake_device.during_alloc = None
    assert len(cache.pending) == 1
    assert cache.stats()["allocated_bytes.current"] == 3 * MB
    del big


def test_lease_in_a_reference_cycle(fake_device):
    cache = fake_device.allocator()

    class Holder:
        pass

    holder = Holder()
    holder.self = holder
    holder.lease = cache.allocate(1000)[2]
    del holder
    gc.collect()
    assert cache.stats()["active_blocks.current"] == 0


def test_large_cpu_tensor_loop_keeps_reserved_flat():
    assert REGISTRY.backend("cpu").cache_min_bytes <= 4 * MB
    x = ember.ones(1024, 1024)  # 4 MiB: through the caching allocator
    cache = REGISTRY.backend("cpu").allocator(x.device.index)
    y = x
    for _ in range(5):
        y = (y + x) * 0.5
    reserved = cache.stats()["reserved_bytes.current"]
    for _ in range(200):
        y = (y + x) * 0.5
    stats = cache.stats()
    assert stats["reserved_bytes.current"] == reserved
    assert y[0, 0].item() == 1.0


def test_human_sizes():
    assert alloc_mod._human(0) == "0 B"
    assert alloc_mod._human(1023) == "1023 B"
    assert alloc_mod._human(1536) == "1.50 KiB"
    assert alloc_mod._human(3 * 1024**3) == "3.00 GiB"
    assert alloc_mod._human(5 * 1024**4) == "5120.00 GiB"


@pytest.mark.parametrize("form", ["pair", "leading", "none"])
def test_small_alloc_forms_feed_empty(form, monkeypatch):
    """A runtime's ``small_alloc`` (docs/plugins.md): ``(alloc, address)`` with ``alloc(nbytes)``,
    ``(alloc, leading, address)`` with ``alloc(leading, nbytes)`` (the CPU's), or none (the
    runtime's ``alloc(nbytes, index)`` and ``address``); every small op output comes from it."""
    from ember.dispatcher.memory import backend_for, forget_routes

    runtime = backend_for("cpu").runtime
    raw_alloc = runtime.alloc
    calls = []

    def alloc(*args):
        calls.append(args)
        return raw_alloc(args[-1] if form != "none" else args[0])

    if form == "none":
        monkeypatch.setattr(runtime, "alloc", alloc)
        monkeypatch.delattr(runtime, "small_alloc")
    elif form == "pair":
        monkeypatch.setattr(runtime, "small_alloc", (alloc, runtime.address))
    else:
        monkeypatch.setattr(runtime, "small_alloc", (alloc, "lead", runtime.address))
    forget_routes()
    try:
        a = ember.arange(6, dtype=ember.float32)
        assert (a + a).tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        expected = {"pair": (24,), "leading": ("lead", 24), "none": (24, None)}[form]
        assert expected in calls
    finally:
        monkeypatch.undo()
        forget_routes()
    assert (ember.arange(3.0) * 2).tolist() == [0.0, 2.0, 4.0]
