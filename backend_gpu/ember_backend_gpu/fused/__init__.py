"""Fused kernels for ember's GPU backends: ``ember_fused_kernel`` in the shared layer.

ember's compiler hands a backend a description of a chain of elementwise ops (its
``compiler/fusion.py`` ``FusedKernel``, in the op table's names) and gets back a callable. One
generator writes the kernel for every GPU target from that description: ``chain`` (a chain,
possibly with row statistics or ending in a row op over the last dim: ``rows``; a row op's
tail: ``tail``; the steps: ``steps``) and ``multi`` (a multi-tensor chain: an optimizer's
update over all its tensors), each in a ``dialect`` (CUDA C++ for CUDA and HIP,
OpenCL C for xpu) whose per-op expressions are those of the target's eager elementwise kernels.
This module is the glue of the CUDA-like runtimes (``gpu.GpuRuntime``: CUDA, ROCm and the
emulator), which build a generated module as they build codegen's (the same compiler and disk
cache, keyed by source); the xpu plugin has its own glue over the same text
(backend_intel/fused.py).

A kernel that reads indices takes the device's status word last and is checked after the
launch (the call raises eager's IndexError); a tail's kernel takes device scratch (its output
rows, the sums' columns, its indices) and a second launch of one block adds the sums.

A description the generator cannot express, or a compiler that rejects the text, gives None:
the chain replays op by op.
"""

from __future__ import annotations

import hashlib
import logging
import math

import numpy as np

from .. import launch
from ..diskcache import CompileError
from ..kernels._args import addr, device, first_outside, raise_status
from . import chain, multi, rows, tail
from .dialect import CUDA, HIP

LOG = logging.getLogger("ember_backend_gpu.fused")
DIALECTS = {"cuda": CUDA, "hip": HIP}


def hook(runtimes: dict, device_type: str, description):
    """A CUDA-like plugin's ``ember_fused_kernel``: ``runtimes`` holds what its
    ``ember_backend_load`` made, by device type."""
    runtime = runtimes.get(device_type)
    return None if runtime is None else kernel(runtime, description)


def kernel(runtime, description):
    """``fn(*outs, *inputs)`` for ``description`` on ``runtime``'s devices, or None."""
    dialect = DIALECTS.get(runtime.target)
    if dialect is None:
        return None
    if getattr(description, "segments", ()):
        return _multi(runtime, description, dialect)
    sized = chain.sizes_of(description)
    made = chain.source(description, dialect, sized)
    if made is None:
        return None
    text, work, lanes = made
    checked = chain.checked(description)
    extras = [size for _name, _kind, size in tail.extras(description, _itemsize(description))]
    count = len(description.outputs) + len(description.inputs) + len(extras) + checked
    numbers = "q" * (sum(sized.varies) if sized is not None else 0)  # the sizes per call
    function = _builder(runtime, text, chain.KERNEL, "P" * count + numbers)
    if function is None:
        return None
    totals = tail.totals(description)
    if totals:  # the same module: built already
        total = _builder(runtime, text, tail.TOTAL_KERNEL, "P" * count)
    starts = [sum(-(-size // 256) * 256 for size in extras[:k]) for k in range(len(extras) + 1)]

    def run(*tensors):
        count, sizes = (work, ()) if sized is None else sized.arguments(tensors)
        if count:
            index = device(tensors[0])
            sm = runtime.sm_count(index)
            # a block per row (lanes), or a thread per element or row
            blocks = min(count, sm * launch.BLOCKS_PER_SM) if lanes else launch.grid(count, sm)
            args = [addr(t) for t in tensors]
            if extras:  # a row tail's scratch: output rows, the sums' columns, the indices
                at = runtime.scratch(index, starts[-1])
                args += [at + start for start in starts[:-1]]
            if checked:
                args.append(runtime.status_word(index))
            args += sizes
            runtime.call(index, function(index), blocks, lanes or launch.BLOCK, *args)
            if totals:  # one block adds the columns in a fixed order
                runtime.call(index, total(index), 1, rows.LANES, *args)
            if checked:
                _check(runtime, index, description, tensors, args)

    run.source = text
    if sized is not None:
        run.dynamic = sized.dims  # what the compiler checks: this kernel takes the sizes
    return run


def _check(runtime, index: int, d, tensors, args) -> None:
    """Raise what the kernel reported into the status word (waits for it, as eager's index
    kernels do): an index out of range, named as eager names it (the status word holds no
    value on CUDA: the first bad one is read from the index tensor, or a gather's from the
    indices the kernel kept, ``em_ix``)."""
    status = runtime.read_status(index)
    if not status:
        return
    op, detail = chain.index_error(d)
    if tail.gathers(d):
        rows_ = math.prod(d.shape[:-1])
        values = np.empty(rows_, np.int64)
        runtime.read(index, values, args[-2])  # em_ix: the last scratch, before the status
        outside = values[(values < 0) | (values >= d.shape[-1])]
        bad = int(outside[0]) if outside.size else None
    else:
        (k,) = {s.args[1][1] for s in d.steps if s.op == "scatter_add"}
        bad = first_outside(runtime, tensors[len(d.outputs) + k], 0, d.shape[-1])
    raise_status(status, op, d.dtype, "" if bad is None else detail.format(bad=bad))


def _itemsize(d) -> int:
    return 8 if d.dtype == "float64" else 4


def _builder(runtime, text: str, name: str, arg_format: str):
    """``index -> launchable function`` of the generated module ``text``, built now on the
    current device (a compile error returns None: the chain runs op by op)."""
    module = "fused." + hashlib.sha256(text.encode()).hexdigest()[:24]

    def function(index):
        return runtime.generated(index, module, text, name, arg_format)

    try:
        function(runtime.current_device())
    except CompileError as failed:
        LOG.warning("fused kernel not built (%s); the chain runs op by op", failed)
        return None
    return function


def _multi(runtime, d, dialect):
    """The multi-tensor kernel: one launch over every tensor, their pointers and sizes a table
    in device memory written at each call."""
    text = multi.source(d, dialect)
    if text is None:
        return None
    columns = multi.layout(d)
    numbers = [k for k, spec in enumerate(d.inputs) if not multi.segmented(spec)]
    function = _builder(runtime, text, multi.KERNEL, "P" * (1 + len(numbers)))
    if function is None:
        return None
    per_tensor = [True] * sum(w is None for w in d.writes) + [multi.segmented(s) for s in d.inputs]
    count = len(d.segments)
    rows = np.zeros((count, len(columns) + 1), np.int64)
    rows[:, -1] = d.segments
    tables: dict = {}  # device -> its table's allocation (kept with the kernel)
    longest = max(d.segments)

    def run(*args):
        index = device(next(a[0] if p else a for p, a in zip(per_tensor, args)))
        column, scalars = 0, []
        for each, arg in zip(per_tensor, args):
            if each:
                rows[:, column] = [addr(t) for t in arg]
                column += 1
            else:
                scalars.append(addr(arg))
        table = tables.get(index)
        if table is None:
            table = tables[index] = runtime.alloc(rows.nbytes, index)
        runtime.copy_in(table, 0, rows.view(np.uint8).reshape(-1), index)
        sm = runtime.sm_count(index)
        blocks = max(1, min(-(-longest // launch.BLOCK), -(-sm * launch.BLOCKS_PER_SM // count)))
        at = runtime.address(table)
        runtime.call(index, function(index), (blocks, count), launch.BLOCK, at, *scalars)

    run.source = text
    run.segments = d.segments  # what the compiler checks: this kernel takes them
    return run
