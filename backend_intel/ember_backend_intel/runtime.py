"""Device memory and queues for ``xpu``: the runtime contract of an ember backend over OpenCL.

Each device gets its own context and one in-order command queue, so work runs in the order it
was enqueued and nothing but a read back to the host waits for the device. Memory is ``cl.Buffer``
handed to ember's caching allocator (``cache_min_bytes = 0``): tensors are (buffer, byte offset)
pairs, which is also how kernels receive them.

Transfers: host -> device copies are staged through a private host copy and enqueued without
blocking (OpenCL forbids touching the source until the copy ran, and the caller may reuse its
array at once); device -> host copies block, since the caller reads the bytes next.
"""

from __future__ import annotations

import contextlib
import types

import numpy as np

from .programs import Programs

LOCAL_SIZE = 256  # work-items per group, unless the device or kernel allows fewer
SPARE_PER_CLASS = 4  # scratch buffers kept per size class
PRUNE_UPLOADS = 16  # uploads in flight before the finished ones are dropped


class Device:
    """One OpenCL device: context, queue, compiled programs, and the memory ember holds on it."""

    def __init__(self, cl, cl_device, index: int):
        self.cl_device = cl_device
        self.index = index
        self.name = cl_device.name.strip()
        self.platform = cl_device.platform.name.strip()
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE
        )
        extensions = cl_device.extensions.split()
        self.fp64 = "cl_khr_fp64" in extensions or bool(cl_device.double_fp_config)
        self.fp16 = "cl_khr_fp16" in extensions
        self.total_memory = int(cl_device.global_mem_size)
        self.max_alloc = int(cl_device.max_mem_alloc_size)
        # A power of two (tree reductions halve it), at most what the device allows.
        allowed = min(LOCAL_SIZE, int(cl_device.max_work_group_size))
        self.local_size = 1 << (allowed.bit_length() - 1)
        # Enough groups to fill the device, for kernels that split work by groups (reductions).
        self.compute_units = int(cl_device.max_compute_units)
        self.max_groups = max(64, 32 * self.compute_units)
        # A CPU device (PoCL) runs a work-group as a loop over its work-items, a barrier as the
        # end of one such loop: kernels that sync inside groups cost more there than on a GPU.
        self.cpu = bool(cl_device.type & cl.device_type.CPU)
        self.allocated = 0
        flags = cl.mem_flags
        # A 16-byte status word kernels report errors into (kept at zero between calls), and a
        # buffer to pass where an operand is a scalar (kernels then never read it).
        self.status = cl.Buffer(self.context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                                hostbuf=np.zeros(2, np.int64))  # fmt: skip
        self.dummy = cl.Buffer(self.context, flags.READ_WRITE, 64)
        self.programs = Programs(cl, self)
        self._cl = cl
        self._enqueue = cl.enqueue_nd_range_kernel
        self._spare: dict = {}  # scratch buffers by size class, free for the next kernel
        # Uploads in flight. pyopencl's event for a copy from host memory waits for the copy
        # when it is dropped, so they are kept until done (pruned here, cleared on finish).
        self.uploads: list = []

    def keep_upload(self, event) -> None:
        uploads = self.uploads
        if len(uploads) >= PRUNE_UPLOADS:
            done = self._cl.command_execution_status.COMPLETE
            uploads[:] = [e for e in uploads if e.command_execution_status != done]
        uploads.append(event)

    def finish(self) -> None:
        self.queue.finish()
        self.uploads.clear()

    @contextlib.contextmanager
    def scratch(self, *sizes: int):
        """Temporary device buffers of at least ``sizes`` bytes for the kernels enqueued inside the
        block. The queue is in order, so a buffer is free again for whatever is enqueued after
        the block, even before the device ran it."""
        taken = []
        for size in sizes:
            size_class = max(4096, 1 << (max(int(size), 1) - 1).bit_length())
            spare = self._spare.get(size_class)
            buffer = spare.pop() if spare else None
            if buffer is None:
                buffer = self._cl.Buffer(self.context, self._cl.mem_flags.READ_WRITE, size_class)
            taken.append((size_class, buffer))
        try:
            yield [buffer for _size, buffer in taken]
        finally:
            for size_class, buffer in taken:
                spare = self._spare.setdefault(size_class, [])
                if len(spare) < SPARE_PER_CLASS:
                    spare.append(buffer)
                else:
                    buffer.release()

    def drop_scratch(self) -> None:
        """Release the spare scratch buffers (ember.xpu.empty_cache does not reach them)."""
        for spare in self._spare.values():
            for buffer in spare:
                buffer.release()
        self._spare.clear()

    def groups(self, n: int, local: int) -> int:
        """Global size for ``n`` work-items in groups of ``local``: one work-item per item.
        Kernels also loop (grid-stride) when given fewer, but on a CPU device (PoCL) a work-item
        striding through memory is 40x slower than as many work-items as items."""
        return -(-n // local) * local

    def launch(self, kernel, n: int, *args) -> None:
        """Run ``kernel`` over ``n`` work-items (kernels skip or loop over the excess)."""
        if n <= 0:
            return
        local = kernel.local
        kernel.fn(self.queue, (self.groups(n, local),), (local,), *args)

    def relaunch(self, kernel, n: int, o, a, b, c, meta: bytes) -> None:
        """Launch an elementwise ``kernel`` again with new buffers ``o a b c`` (its first four
        arguments) and packed ``meta`` (the fifth); the others keep the values of its previous
        launch, as OpenCL keeps them, which saves setting them."""
        set_arg = kernel.set_arg
        set_arg(0, o)
        set_arg(1, a)
        set_arg(2, b)
        set_arg(3, c)
        kernel.set_bytes(4, meta)
        local = kernel.local
        self._enqueue(self.queue, kernel.fn, (-(-n // local) * local,), (local,), None, None)

    def read_status(self) -> tuple[int, int]:
        """(code, value) the kernels reported since the last read; resets it. Waits for them."""
        found = np.zeros(2, np.int64)
        self._cl.enqueue_copy(self.queue, found, self.status, is_blocking=True)
        self.uploads.clear()  # the queue is in order: everything before the read has run
        if found[0]:
            zeros = np.zeros(2, np.int64)
            self._cl.enqueue_copy(self.queue, self.status, zeros, is_blocking=True)
        return int(found[0]), int(found[1])


class OpenCLRuntime:
    """The runtime contract of ember's backends (see ember's dispatcher/hookspecs.py)."""

    device_type = "xpu"
    host_memory = False  # numpy cannot see device memory: ember copies through the host
    cache_min_bytes = 0  # every allocation goes through ember's caching allocator

    def __init__(self, cl, cl_devices):
        self._cl = cl
        self.devices = [Device(cl, d, i) for i, d in enumerate(cl_devices)]
        self._current = 0
        self.Event = _event_class(cl, self)

    def _device(self, index) -> Device:
        return self.devices[self._current if index is None else index]

    # ---- devices ------------------------------------------------------------------------------
    def device_count(self) -> int:
        return len(self.devices)

    def device_name(self, index=None) -> str:
        return self._device(index).name

    def current_device(self) -> int:
        return self._current

    def set_device(self, index: int) -> None:
        if not 0 <= index < len(self.devices):
            raise RuntimeError(f"xpu:{index} does not exist: {len(self.devices)} device(s)")
        self._current = index

    def device_properties(self, index=None):
        d = self._device(index)
        dev = d.cl_device
        return types.SimpleNamespace(
            name=d.name,
            platform=d.platform,
            type=self._cl.device_type.to_string(dev.type),
            driver_version=dev.driver_version,
            opencl_version=dev.version,
            total_memory=d.total_memory,
            max_allocation=d.max_alloc,
            multi_processor_count=int(dev.max_compute_units),
            max_work_group_size=int(dev.max_work_group_size),
            has_fp64=d.fp64,
            has_fp16=d.fp16,
        )

    def device_capability(self, index=None) -> tuple[int, int]:
        """The device's OpenCL version, ``(3, 0)`` for "OpenCL 3.0 ..."."""
        version = self._device(index).cl_device.version.split()[1]
        major, minor = version.split(".")[:2]
        return int(major), int(minor)

    def mem_get_info(self, index=None) -> tuple[int, int]:
        """(free, total) bytes; OpenCL reports no free figure, so free is total minus ember's."""
        d = self._device(index)
        return d.total_memory - d.allocated, d.total_memory

    # ---- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int, index=None):
        d = self._device(index)
        size = max(int(nbytes), 1)
        where = f"xpu:{d.index} ({d.name})"
        if size > d.max_alloc:
            raise MemoryError(
                f"{where}: one buffer of {size} bytes exceeds the device's largest allocation "
                f"(CL_DEVICE_MAX_MEM_ALLOC_SIZE = {d.max_alloc} bytes)"
            )
        if d.allocated + size > d.total_memory:
            raise MemoryError(
                f"{where}: {size} more bytes would exceed the device's {d.total_memory} bytes "
                f"({d.allocated} held by ember)"
            )
        cl = self._cl
        try:
            buffer = cl.Buffer(d.context, cl.mem_flags.READ_WRITE, size)
        except cl.Error as exc:
            raise MemoryError(f"{where}: allocating {size} bytes failed: {exc}") from exc
        d.allocated += size
        return buffer

    def free(self, handle, index=None) -> None:
        self._device(index).allocated -= handle.size
        handle.release()

    def address(self, handle):
        return None  # OpenCL buffers have no addresses: kernels take (buffer, offset) pairs

    def copy_in(self, handle, byte_offset: int, src, index=None) -> None:
        staged = _host_bytes(src).copy()
        if staged.size:
            d = self._device(index)
            event = self._cl.enqueue_copy(
                d.queue, handle, staged, dst_offset=byte_offset, is_blocking=False
            )
            d.keep_upload(event)

    def copy_out(self, dst, handle, byte_offset: int, index=None) -> None:
        view = _host_bytes(dst)
        if view.size:
            d = self._device(index)
            self._cl.enqueue_copy(d.queue, view, handle, src_offset=byte_offset, is_blocking=True)
            d.uploads.clear()  # the queue is in order: everything before the read has run

    def copy_between(self, dst, dst_offset, src, src_offset, nbytes, index=None) -> None:
        if not nbytes:
            return
        queue = self._device(index).queue
        cl = self._cl
        if dst is src and abs(dst_offset - src_offset) < nbytes:
            # clEnqueueCopyBuffer refuses overlapping ranges: go through a scratch buffer.
            scratch = cl.Buffer(self._device(index).context, cl.mem_flags.READ_WRITE, nbytes)
            cl.enqueue_copy(queue, scratch, src, byte_count=nbytes, src_offset=src_offset)
            src, src_offset = scratch, 0
        cl.enqueue_copy(
            queue, dst, src, byte_count=nbytes, src_offset=src_offset, dst_offset=dst_offset
        )

    def synchronize(self, index=None) -> None:
        targets = self.devices if index is None else [self.devices[index]]
        for d in targets:
            d.finish()


def _host_bytes(array) -> np.ndarray:
    """The bytes of a contiguous host array (any dtype, bfloat16 included) as a uint8 view."""
    return np.asarray(array).reshape(-1).view(np.uint8)


def _event_class(cl, runtime):
    """``ember.xpu.Event``: a marker in a device's queue, like ``torch.xpu.Event``."""

    class Event:
        def __init__(self, enable_timing: bool = False):
            self.enable_timing = enable_timing
            self._event = None

        def record(self, stream=None) -> None:
            self._event = cl.enqueue_marker(runtime._device(None).queue)

        def query(self) -> bool:
            if self._event is None:
                return True
            status = self._event.command_execution_status
            return status == cl.command_execution_status.COMPLETE

        def synchronize(self) -> None:
            if self._event is not None:
                self._event.wait()

        def wait(self, stream=None) -> None:
            self.synchronize()  # one in-order queue per device: waiting is all there is to do

        def elapsed_time(self, end) -> float:
            """Milliseconds between this event and ``end`` (both recorded and completed)."""
            if self._event is None or end._event is None:
                raise RuntimeError("elapsed_time(): both events must have been recorded")
            end.synchronize()
            info = cl.profiling_info.END
            start, stop = (e._event.get_profiling_info(info) for e in (self, end))
            return (stop - start) / 1e6

    return Event
