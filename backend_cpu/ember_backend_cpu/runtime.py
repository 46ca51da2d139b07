"""Host memory for the ``cpu`` device: cffi buffers, so numpy views of them are zero-copy."""

from __future__ import annotations

import os
import platform


class CpuRuntime:
    """The runtime contract of a backend (see ember's docs/plugins.md), for host memory."""

    device_type = "cpu"
    host_memory = True  # tensors' bytes are directly readable by numpy
    # Requests from 64 KiB up go through ember's caching allocator: reusing buffers avoids the
    # page faults a fresh mmap costs (glibc maps such sizes, or trims them back to the system
    # when freed). The limit was 1 MiB, and in a backward pass, where many 512 KiB
    # intermediates are alive at once, a multiply of 1024 x 128 floats took 111 us instead of 8
    # (layer_norm forward and backward: 1670 us, now 392). Smaller ones are plain malloc.
    cache_min_bytes = 1 << 16

    def __init__(self, ffi, lib):
        self._ffi = ffi
        self._lib = lib
        # No zeroing: factories that need zeros fill explicitly.
        self._new = ffi.new_allocator(should_clear_after_alloc=False)
        self._cast = ffi.cast
        # ember's empty() allocates small outputs with these two C-level calls, no Python frame
        # (docs/plugins.md, ``small_alloc``): a buffer that frees itself when collected
        # (``self._new(self._bytes, nbytes)``: the allocator with its type, without the argument
        # tuple a functools.partial builds per call), and its address (a cffi call that keeps
        # the GIL, held.py; cheaper than int(ffi.cast("intptr_t", buffer))). A zero-byte buffer
        # has an address of its own too, as alloc's one-byte minimum gives. The array type
        # resolved once: ffi.new parses a type string at every call (about 10% of the
        # allocation, callgrind).
        from . import held

        self._bytes = ffi.typeof("char[]")
        self.small_alloc = (self._new, self._bytes, held.lib.ember_held_address)

    def device_count(self) -> int:
        return 1

    def device_name(self, index=None) -> str:
        return platform.processor() or platform.machine() or "cpu"

    def alloc(self, nbytes: int, index=None):
        # The cdata frees its memory when collected, so small storages need no free() call.
        return self._new(self._bytes, nbytes if nbytes > 0 else 1)

    def free(self, handle, index=None) -> None:
        del handle  # dropping the last reference releases it

    def address(self, handle) -> int:
        return int(self._cast("intptr_t", handle))

    def copy_in(self, handle, byte_offset: int, src, index=None) -> None:
        """Copy the bytes of a contiguous host buffer into ``handle`` at ``byte_offset``."""
        view = memoryview(src).cast("B")
        self._ffi.memmove(self._ffi.cast("char *", handle) + byte_offset, view, len(view))

    def copy_out(self, dst, handle, byte_offset: int, index=None) -> None:
        """Copy bytes from ``handle`` at ``byte_offset`` into a contiguous host buffer."""
        view = memoryview(dst).cast("B")
        self._ffi.memmove(view, self._ffi.cast("char *", handle) + byte_offset, len(view))

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        cast = self._ffi.cast
        self._ffi.memmove(
            cast("char *", dst) + dst_offset, cast("char *", src) + src_offset, nbytes
        )

    def synchronize(self, index=None) -> None:
        pass

    def num_threads(self) -> int:
        return self._lib.ember_num_threads()

    def set_num_threads(self, n: int) -> None:
        self._lib.ember_set_num_threads(int(n))


def default_threads() -> int | None:
    value = os.environ.get("EMBER_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    return int(value) if value else None
