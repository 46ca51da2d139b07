"""Glue for copy_/cast, fill_, arange and linspace.

Same-dtype copies between contiguous tensors are one ``cuMemcpyDtoDAsync``, and filling a
contiguous tensor with zero one memset; everything else is a strided kernel.
"""

from __future__ import annotations

from ..codegen import copy as gen
from ._args import DTYPE_NAMES, TOKENS, addr, numel, operand, run_strided, scalar_parts


def build(rt) -> dict:
    def copy_(dst, src):
        """dst[...] = src with a cast; src is broadcast to dst's shape already."""
        dev = dst._storage.device.index or 0
        if dst._dtype is src._dtype and dst._contig and src._contig:
            nbytes = numel(dst) * dst._dtype.itemsize
            if nbytes and addr(dst) != addr(src):
                rt.memcpy(dev, addr(dst), addr(src), nbytes)
            return
        shape = dst._shape or (1,)
        name = gen.cast_name(TOKENS[src._dtype.code], TOKENS[dst._dtype.code])
        operands = [operand(dst, dst._dtype.code, shape), operand(src, src._dtype.code, shape)]
        run_strided(rt, dev, name, shape, operands)

    def fill_(out, value):
        dev = out._storage.device.index or 0
        code = out._dtype.code
        f, i = scalar_parts(code, value)
        if out._contig and f == 0 and i == 0 and not _negative_zero(f):
            rt.memset(dev, addr(out), numel(out) * out._dtype.itemsize)
            return
        shape = out._shape or (1,)
        run_strided(
            rt, dev, f"em_fill_{TOKENS[code]}", shape, [operand(out, code, shape)], tail=(f, i)
        )

    def arange(out, start, step):
        code = out._dtype.code
        n = numel(out)
        if n:
            fstart, istart = scalar_parts(code, start)
            fstep, istep = scalar_parts(code, step)
            rt.launch_1d(
                out._storage.device.index or 0,
                f"em_arange_{TOKENS[code]}",
                n,
                addr(out),
                n,
                fstart,
                fstep,
                istart,
                istep,
            )

    def linspace(out, start, end):
        code = out._dtype.code
        n = numel(out)
        if n:
            start, end = float(start), float(end)
            step = (end - start) / (n - 1) if n > 1 else 0.0
            rt.launch_1d(
                out._storage.device.index or 0,
                f"em_linspace_{TOKENS[code]}",
                n,
                addr(out),
                n,
                start,
                end,
                step,
                n // 2,
            )

    every = dict.fromkeys(DTYPE_NAMES)
    numeric = dict.fromkeys(DTYPE_NAMES[1:])
    return {
        "copy_": dict.fromkeys(every, copy_),
        "fill_": dict.fromkeys(every, fill_),
        "arange": dict.fromkeys(numeric, arange),
        "linspace": dict.fromkeys(numeric, linspace),
    }


def _negative_zero(f: float) -> bool:
    return f == 0 and str(f).startswith("-")
