"""Glue for the reductions and scans (clc/reduce.cl).

Calling conventions (set by ember's reduction runners, which validate, wrap dims and allocate):

- sum, prod, amax, amin, all, any: ``kernel(out, x, dims)``; ``out`` has x's rank with size 1 on
  the reduced ``dims`` (a sorted tuple), and is fresh, so contiguous.
- max, min: ``kernel(values, indices, x, dim)``; argmax, argmin: ``kernel(indices, x, dim)``.
- cumsum, cumprod: ``kernel(out, x, dim)``, ``out`` of x's shape and dtype.

A reduction runs one work-item per output when each output folds few elements, or when there
are enough outputs to fill the device and either the kept elements are adjacent in memory (neighbour
work-items read neighbour elements: coalesced on a GPU, vector loads on a CPU) or the device is a
CPU (where a work-group's tree costs a loop over its work-items per level: 8x slower there);
else a work-group per output, and when there are too few outputs to fill the device, each output
is split in chunks whose partial results a second kernel folds in order.
"""

from __future__ import annotations

import math

from ..programs import source
from ._launch import DTYPE_NAMES, MAX_DIMS, TOKENS, device_of, merge_dims, offset, pack

REDUCE = ("sum", "prod", "amax", "amin", "all", "any")
# op -> (comparison, whether it returns values); the comparisons are BETTER_* of reduce.cl.
INDEXED = {"max": ("greater", True), "min": ("less", True), "argmax": ("greater", False),
           "argmin": ("less", False)}  # fmt: skip
SCANS = {"cumsum": "sum", "cumprod": "prod"}
SHORT = 64  # reductions of at most this many elements run one work-item per output
ITEMS_PER_UNIT = 64  # outputs per compute unit from which one work-item per output fills a device
PER_ITEM = 16  # elements per work-item before a reduction is split over several groups
MAX_SPLIT = 64
ACC_BYTES = 8  # room for one partial result (reduce.cl's accumulators are at most 8 bytes)


def _source(defines: dict, local: int) -> str:
    lines = [f"#define {k} {v}" for k, v in defines.items()] + [f"#define LOCAL {local}"]
    return "\n".join(lines) + "\n" + source("reduce.cl")


def _walk(x, reduced: tuple, op: str) -> tuple:
    """(kept shape, kept strides, reduced shape, reduced strides) of x, dims merged."""
    shape, stride = x._shape, x._stride
    kept = [d for d in range(len(shape)) if d not in reduced]
    kshape, (kst,) = merge_dims(tuple(shape[d] for d in kept), [tuple(stride[d] for d in kept)])
    rshape, (rst,) = merge_dims(
        tuple(shape[d] for d in reduced), [tuple(stride[d] for d in reduced)]
    )
    if len(kshape) > MAX_DIMS or len(rshape) > MAX_DIMS:
        raise RuntimeError(
            f"{op}: the xpu kernel walks at most {MAX_DIMS} kept and {MAX_DIMS} reduced dims once "
            f"merged; {list(x._shape)} with strides {list(x._stride)} needs more: make the input "
            "contiguous first"
        )
    return kshape, kst, rshape, rst


def _split(dev, outputs: int, total: int) -> tuple[int, int]:
    """(chunks per output, elements per chunk) for the group kernels."""
    want = min(MAX_SPLIT, -(-total // (dev.local_size * PER_ITEM)), -(-dev.max_groups // outputs))
    chunk = -(-total // max(want, 1)) if total else 1
    return (-(-total // chunk) if total else 1), chunk


def _per_item(dev, outputs: int, total: int, kst: tuple) -> bool:
    """Whether one work-item per output beats a work-group per output (see the module's doc)."""
    if total <= SHORT:
        return True
    if outputs < ITEMS_PER_UNIT * dev.compute_units:
        return False
    return dev.cpu or (bool(kst) and kst[-1] == 1)


def _make_reduce(runtime, op: str):
    def kernel(out, x, dims):
        dev = device_of(runtime, x)
        token, out_token = TOKENS[x._dtype.code], TOKENS[out._dtype.code]
        kernels = dev.programs.get(
            ("reduce", op, token, out_token),
            lambda: _source({"T": token, "OUT": out_token, "OP": f"R_{op}"}, dev.local_size),
        )
        kshape, kst, rshape, rst = _walk(x, dims, op)
        outputs, total = math.prod(kshape), math.prod(rshape)
        if outputs == 0:
            return
        walk = (pack(kshape), pack(kst), len(kshape), pack(rshape), pack(rst), len(rshape), total)
        o, oo, xb, xo = out._storage.handle, offset(out), x._storage.handle, offset(x)
        if _per_item(dev, outputs, total, kst):
            dev.launch(kernels["reduce_items"], outputs, o, oo, xb, xo, *walk, outputs)
            return
        chunks, chunk = _split(dev, outputs, total)
        groups = kernels["reduce_groups"]
        with dev.scratch(ACC_BYTES * outputs * chunks) as (partial,):
            groups.fn(
                dev.queue, (outputs * chunks * groups.local,), (groups.local,),
                o, oo, partial, xb, xo, *walk, chunk, chunks,
            )  # fmt: skip
            if chunks > 1:
                dev.launch(kernels["reduce_partials"], outputs, o, oo, partial, chunks, outputs)

    kernel.__qualname__ = f"xpu.{op}"
    return kernel


def _make_indexed(runtime, op: str, cmp: str, with_values: bool):
    def run(values, indices, x, dim):
        dev = device_of(runtime, x)
        token = TOKENS[x._dtype.code]
        kernels = dev.programs.get(
            ("index_reduce", cmp, token),
            lambda: _source({"T": token, "OUT": token, "INDEXED": 1, "CMP": cmp}, dev.local_size),
        )
        dims = (dim,) if x._shape else ()
        kshape, kst, rshape, rst = _walk(x, dims, op)
        outputs, total = math.prod(kshape), math.prod(rshape)
        walk = (pack(kshape), pack(kst), len(kshape), pack(rshape), pack(rst), len(rshape), total)
        vb, vo = (values._storage.handle, offset(values)) if with_values else (dev.dummy, 0)
        head = (vb, vo, indices._storage.handle, offset(indices), int(with_values))
        xb, xo = x._storage.handle, offset(x)
        if _per_item(dev, outputs, total, kst):
            dev.launch(kernels["index_items"], outputs, *head, xb, xo, *walk, outputs)
            return
        chunks, chunk = _split(dev, outputs, total)
        groups = kernels["index_groups"]
        n = ACC_BYTES * outputs * chunks
        with dev.scratch(n, n) as (pv, pi):
            groups.fn(
                dev.queue, (outputs * chunks * groups.local,), (groups.local,),
                *head, pv, pi, xb, xo, *walk, chunk, chunks,
            )  # fmt: skip
            if chunks > 1:
                dev.launch(kernels["index_partials"], outputs, *head, pv, pi, chunks, outputs)

    if with_values:

        def kernel(values, indices, x, dim):
            run(values, indices, x, dim)

    else:

        def kernel(indices, x, dim):
            run(None, indices, x, dim)

    kernel.__qualname__ = f"xpu.{op}"
    return kernel


def _make_scan(runtime, op: str, combine: str):
    def kernel(out, x, dim):
        dev = device_of(runtime, x)
        token = TOKENS[x._dtype.code]
        kernels = dev.programs.get(
            ("scan", combine, token),
            lambda: _source({"T": token, "OUT": token, "SCAN": f"R_{combine}"}, dev.local_size),
        )
        shape = x._shape or (1,)
        xs, os_ = x._stride or (1,), out._stride or (1,)
        other = [d for d in range(len(shape)) if d != dim]
        lshape, (lxs, los) = merge_dims(
            tuple(shape[d] for d in other),
            [tuple(xs[d] for d in other), tuple(os_[d] for d in other)],
        )
        lines = math.prod(lshape)
        if len(lshape) > MAX_DIMS:
            raise RuntimeError(f"{op}: more than {MAX_DIMS} dims besides dim {dim} once merged")
        dev.launch(
            kernels["scan_lines"], lines, out._storage.handle, offset(out), x._storage.handle,
            offset(x), pack(lshape), pack(lxs), pack(los), len(lshape), lines, shape[dim],
            xs[dim], os_[dim],
        )  # fmt: skip

    kernel.__qualname__ = f"xpu.{op}"
    return kernel


def build(runtime) -> dict:
    every, numeric = DTYPE_NAMES, DTYPE_NAMES[1:]
    table = {op: dict.fromkeys(every, _make_reduce(runtime, op)) for op in REDUCE}
    for op, (cmp, with_values) in INDEXED.items():
        table[op] = dict.fromkeys(
            every if with_values else numeric, _make_indexed(runtime, op, cmp, with_values)
        )
    for op, combine in SCANS.items():
        table[op] = dict.fromkeys(numeric, _make_scan(runtime, op, combine))
    return table
