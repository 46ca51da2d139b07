"""``ember_fused_kernel`` on xpu: OpenCL C from ember_backend_gpu's fused-kernel generator.

The generator (ember_backend_gpu/fused) writes the kernel text from ember's description in the
OpenCL dialect built here from this plugin's own expression table (the CPU plugin's .def lines,
kernels/_shared.py, as the eager elementwise kernels use them), after clc/ewmath.cl, the
expressions' helpers. Programs are built and cached as the other kernels are (programs.py: once
per device and key, binaries on disk by pyopencl/PoCL keyed by source); the key names the
hash of the text and its dtype, so a float64 chain on a device without doubles is refused (the
hook returns None and the chain runs op by op, as for any text the generator cannot write).

A kernel that reads indices (cross-entropy's one-hot gradient, its forward's gather) takes the
device's status word and is checked after the launch, raising eager's IndexError; a row tail
takes scratch buffers and a second launch of one work-group adds its sums over the rows.

A multi-tensor chain (an optimizer's update) passes its tensors as arguments, ``slots`` per
launch (OpenCL has no device pointers to put in a table), as many as the device's parameter
space holds (PoCL's 1024 bytes: 12 Adam parameters, 10 with amsgrad), so one program serves
the bucket in ``ceil(tensors / slots)`` launches.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math

import numpy as np
from ember_backend_gpu.fused import chain, multi, rows, tail
from ember_backend_gpu.fused.dialect import OPENCL_HEAD, TOKENS, opencl

from .kernels import _shared
from .kernels._launch import check_status, device_of, offset
from .kernels.elementwise import WHERE
from .programs import source

LOG = logging.getLogger("ember_backend_intel.fused")
NO_SCRATCH = contextlib.nullcontext(())
ARG_BYTES = 16  # a buffer (8 bytes on a 64-bit device) and its element offset (a long)


@functools.cache
def dialect():
    lines = [
        (op, _shared.FAMILIES[family], expression)
        for arity in (1, 2, 3)
        for op, family, _out, expression in _shared.op_descriptions(arity)
    ]
    op, family, _out, expression = WHERE
    return opencl([*lines, (op, _shared.FAMILIES[family], expression)])


def kernel(runtime, d):
    """``fn(*outs, *inputs)`` for description ``d`` on xpu, or None."""
    if getattr(d, "segments", ()):
        return _multi(runtime, d)
    sized = chain.sizes_of(d)
    made = chain.source(d, dialect(), sized)
    if made is None:
        return None
    text, work, lanes = made
    program = _program(runtime, text, d.dtype)
    if program is None:
        return None
    checked = chain.checked(d)
    if checked:
        op, detail = chain.index_error(d)
    extras = [size for _name, _kind, size in tail.extras(d, 8 if d.dtype == "float64" else 4)]

    def run(*tensors):
        count, sizes = (work, ()) if sized is None else sized.arguments(tensors)
        if not count:
            return
        dev = device_of(runtime, tensors[0])
        args = [x for t in tensors for x in (t._storage.handle, offset(t))]
        # a row tail's scratch: its rows, the sums' columns, its indices (none: no pool call)
        with dev.scratch(*extras) if extras else NO_SCRATCH as scratch:
            args += [x for buffer in scratch for x in (buffer, 0)]
            if checked:  # indices checked into the status word: raise as eager does
                args.append(dev.status)
            args += [np.int64(n) for n in sizes]  # a size-generic chain's numbers per call
            kernels = program(dev)
            k = kernels[chain.KERNEL]
            if not lanes:  # a work-item per element or row
                dev.launch(k, count, *args)
            else:  # a work-group per row: a power of two, at most lanes
                local = min(k.local, lanes)
                groups = min(work, dev.max_groups)
                k.fn(dev.queue, (groups * local,), (local,), *args)
            if extras and tail.totals(d):  # one work-group adds the columns in a fixed order
                total = kernels[tail.TOTAL_KERNEL]
                local = min(total.local, rows.LANES)
                total.fn(dev.queue, (local,), (local,), *args)
            if checked:  # eager's message names the first bad index in row-major order
                bad = functools.partial(_first_bad, runtime, d, tensors, scratch)
                check_status(dev, op, d.dtype, lambda _: detail.format(bad=bad()))

    run.source = text
    if sized is not None:
        run.dynamic = sized.dims  # what the compiler checks: this kernel takes the sizes
    return run


def _first_bad(runtime, d, tensors, scratch) -> int:
    """The first out-of-range value of scatter_add's index (one per row, contiguous) or of a
    tail's gather (the indices the kernel kept, ``em_ix``: the last scratch), read back: the
    work-items report theirs in no fixed order."""
    index = tensors[0]._storage.device.index
    host = np.empty(math.prod(d.shape[:-1]), np.int64)
    if tail.gathers(d):
        runtime.copy_out(host, scratch[-1], 0, index)
    else:
        (k,) = {s.args[1][1] for s in d.steps if s.op == "scatter_add"}
        t = tensors[len(d.outputs) + k]
        runtime.copy_out(host, t._storage.handle, offset(t) * 8, index)
    return int(host[(host < 0) | (host >= d.shape[-1])][0])


def _program(runtime, text: str, dtype: str):
    """``device -> {kernel name: Kernel}`` of ``text``, built now on the current device (a
    build failure or a float64 chain without doubles returns None)."""
    full = source("ewmath.cl") + OPENCL_HEAD + text
    key = ("fused", hashlib.sha256(full.encode()).hexdigest()[:24], TOKENS[dtype])

    def program(dev):
        return dev.programs.get(key, lambda: full)

    try:
        program(runtime.devices[runtime.current_device()])
    except (RuntimeError, TypeError) as failed:
        LOG.warning("fused kernel not built (%s); the chain runs op by op", failed)
        return None
    return program


def _multi(runtime, d):
    dev = runtime.devices[runtime.current_device()]
    columns = multi.layout(d)
    numbers = [k for k, spec in enumerate(d.inputs) if not multi.segmented(spec)]
    room = int(dev.cl_device.max_parameter_size) - ARG_BYTES * len(numbers)
    slots = max(1, min(len(d.segments), room // (ARG_BYTES * len(columns) + 8)))
    text = multi.source(d, dialect(), slots)
    program = None if text is None else _program(runtime, text, d.dtype)
    if program is None:
        return None
    per_tensor = [True] * sum(w is None for w in d.writes) + [multi.segmented(s) for s in d.inputs]
    sizes = d.segments

    def run(*args):
        lists = [a for p, a in zip(per_tensor, args) if p]
        scalars = [x for p, a in zip(per_tensor, args) if not p for x in (a._storage.handle,
                   offset(a))]  # fmt: skip
        dev = device_of(runtime, lists[0][0])
        k = program(dev)[multi.KERNEL]
        for start in range(0, len(sizes), slots):
            used = min(slots, len(sizes) - start)
            slot_args = []
            for s in range(slots):
                at = start + s if s < used else None
                for tensors in lists:
                    t = tensors[at] if at is not None else None
                    slot_args += [dev.dummy, 0] if t is None else [t._storage.handle, offset(t)]
                slot_args.append(sizes[at] if at is not None else 0)
            longest = max(sizes[start : start + used])
            groups = max(1, min(-(-longest // k.local), dev.max_groups))
            k.fn(dev.queue, (groups * k.local, used), (k.local, 1), *slot_args, *scalars)

    run.source = text
    run.segments = d.segments
    return run
