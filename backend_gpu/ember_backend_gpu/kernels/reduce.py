"""Glue for reductions, index reductions and scans (calling conventions of ember's runners):

- sum, prod, amax, amin, all, any: ``kernel(out, x, dims)``; ``out`` has x's rank with size 1 on
  the reduced ``dims``.
- max, min: ``kernel(values, indices, x, dim)``; argmax, argmin: ``kernel(indices, x, dim)``.
- cumsum, cumprod: ``kernel(out, x, dim)``, ``out`` of x's shape and dtype.
"""

from __future__ import annotations

from .. import launch
from ..codegen import reduce as gen
from ..codegen.dtypes import BY_TOKEN
from ._args import INT64, TOKENS, addr, numel

BOOL = 0


def _reduce(rt, op: str, dev: int, values, indices, x, dims, ocode: int) -> None:
    """Run the reduction of x over ``dims`` into values (or 0) and indices (or 0), whose
    shapes are x's with size 1 on dims and which share element strides."""
    target = values if values is not None else indices
    if numel(target) == 0:
        return
    size = x._dtype.itemsize
    shape = x._shape
    x_strides = tuple(s * size for s in x._stride)
    plan = launch.reduce_plan(shape, x_strides, target._stride, set(dims), rt.sm_count(dev))
    token = TOKENS[x._dtype.code]
    blocks, splits = plan["grid"]
    partial = 0
    if splits > 1:
        partial = rt.scratch(dev, splits * plan["n_out"] * gen.ACCUMULATOR_BYTES[op])
    args = launch.red_args(plan)
    out = addr(values) if values is not None else 0
    out2 = addr(indices) if indices is not None else 0
    rt.launch(
        dev,
        gen.reduce_name(op, token),
        (blocks, splits),
        launch.BLOCK,
        out,
        out2,
        addr(x),
        partial,
        *args,
        ocode,
        0,
    )
    if splits > 1:
        rt.launch_1d(
            dev, gen.finish_name(op, token), plan["n_out"], out, out2, partial, *args, splits, ocode
        )


def _make_reduce(rt, op: str):
    def kernel(out, x, dims):
        code = out._dtype.code
        ocode = 0 if code == x._dtype.code else 1 if code == INT64 else 2
        if code != x._dtype.code and code not in (INT64, BOOL):
            raise NotImplementedError(
                f"{op}: no CUDA kernel from {x._dtype.name} into {out._dtype.name}"
            )
        _reduce(rt, op, out._storage.device.index or 0, out, None, x, dims, ocode)

    return kernel


def _make_index(rt, op: str):
    if op.startswith("arg"):

        def kernel(indices, x, dim):
            _reduce(rt, op, indices._storage.device.index or 0, None, indices, x, (dim,), 0)

    else:

        def kernel(values, indices, x, dim):
            _reduce(rt, op, values._storage.device.index or 0, values, indices, x, (dim,), 0)

    return kernel


def _make_scan(rt, op: str):
    def kernel(out, x, dim):
        if numel(out) == 0:
            return
        dev = out._storage.device.index or 0
        size = x._dtype.itemsize
        shape = x._shape or (1,)
        xs = tuple(s * size for s in x._stride) if x._shape else (0,)
        os_ = tuple(s * size for s in out._stride) if out._shape else (0,)
        args, blocks, threads = launch.rows_plan(
            shape, dim if x._shape else 0, xs, os_, rt.sm_count(dev)
        )
        token = TOKENS[x._dtype.code]
        rt.launch(dev, gen.scan_name(op, token), blocks, threads, addr(out), addr(x), *args)

    return kernel


def build(rt) -> dict:
    table = {}
    for ops, make in (
        (gen.REDUCTIONS, _make_reduce),
        (gen.INDEX_REDUCTIONS, _make_index),
        (gen.SCANS, _make_scan),
    ):
        for op in ops:
            kernel = make(rt, op)
            kernel.__qualname__ = f"cuda.{op}"
            table[op] = {BY_TOKEN[t].name: kernel for t in gen.dtypes_of(op)}
    return table
