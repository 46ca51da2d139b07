"""Device memory for ``ref``: numpy byte arrays standing in for a device's allocations.

The runtime contract (ember's docs/plugins.md): allocate and free, the address of an allocation,
and byte copies to, from and within the device. ember's caching allocator sits on top and hands
out pieces of these allocations, so every offset here is a byte offset into one.
"""

from __future__ import annotations

import numpy as np


class RefRuntime:
    cache_min_bytes = 0  # every allocation goes through ember's caching allocator
    host_memory = False  # behave like an accelerator: numpy() needs .cpu() first

    def device_count(self) -> int:
        return 1

    def device_name(self, index=None) -> str:
        return "numpy reference device"

    def alloc(self, nbytes: int, index=None):
        try:
            return np.empty(max(nbytes, 1), np.uint8)
        except (MemoryError, ValueError) as exc:
            raise MemoryError(f"ref: cannot allocate {nbytes} bytes") from exc

    def free(self, handle, index=None) -> None:
        pass  # numpy releases the array with its last reference

    def address(self, handle) -> int:
        return handle.ctypes.data

    def copy_in(self, handle, byte_offset: int, src, index=None) -> None:
        data = np.frombuffer(memoryview(src).cast("B"), np.uint8)
        handle[byte_offset : byte_offset + data.size] = data

    def copy_out(self, dst, handle, byte_offset: int, index=None) -> None:
        out = np.frombuffer(memoryview(dst).cast("B"), np.uint8)
        out[...] = handle[byte_offset : byte_offset + out.size]

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        dst[dst_offset : dst_offset + nbytes] = src[src_offset : src_offset + nbytes]

    def synchronize(self, index=None) -> None:
        pass  # numpy is synchronous
