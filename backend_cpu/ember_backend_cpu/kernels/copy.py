"""Glue for copy/cast, fill, arange, linspace and stack."""

from __future__ import annotations

import math

from . import limited
from ._args import DTYPE_NAMES, raise_status, scalar_parts


def build(ffi, lib) -> dict:
    null = ffi.NULL
    copy_call, fill_call = lib.ember_copy, lib.ember_fill

    def copy_(dst, src):
        """dst[...] = src with a cast; src is broadcast to dst's shape already."""
        pd = dst._storage.ptr + dst._offset * dst._dtype.itemsize
        ps = src._storage.ptr + src._offset * src._dtype.itemsize
        dc, sc = dst._dtype.code, src._dtype.code
        if sc >= limited.FIRST_CODE:  # float8 or uint16/32/64 into a C dtype: numpy casts
            limited.copy_(dst, src)
            return
        if dst._contig and src._contig:
            status = copy_call(dc, sc, math.prod(dst._shape), 0, null, pd, null, ps, null)
        else:
            shape = dst._shape
            status = copy_call(dc, sc, 0, len(shape), shape, pd, dst._stride, ps, src._stride)
        if status:
            raise_status(status, "copy_", dc)

    def fill_(out, value):
        pd = out._storage.ptr + out._offset * out._dtype.itemsize
        code = out._dtype.code
        f, i = (float(value), 0) if code >= 6 else (0.0, int(value))
        if out._contig:
            status = fill_call(code, math.prod(out._shape), 0, null, pd, null, f, i)
        else:
            shape = out._shape
            status = fill_call(code, 0, len(shape), shape, pd, out._stride, f, i)
        if status:
            raise_status(status, "fill_", code)

    def arange(out, start, step):
        code = out._dtype.code
        fstart, istart = scalar_parts(code, start)
        fstep, istep = scalar_parts(code, step)
        status = lib.ember_arange(
            code, math.prod(out._shape), out._storage.ptr, fstart, fstep, istart, istep
        )
        if status:
            raise_status(status, "arange", code)

    def linspace(out, start, end):
        code = out._dtype.code
        status = lib.ember_linspace(
            code, math.prod(out._shape), out._storage.ptr, float(start), float(end)
        )
        if status:
            raise_status(status, "linspace", code)

    def stack(out, tensors, dim):
        """out (the stacked shape) from contiguous tensors of out's dtype, one C call."""
        shape = tensors[0]._shape
        itemsize = out._dtype.itemsize
        ptrs = [t._storage.ptr + t._offset * itemsize for t in tensors]
        inner = math.prod(shape[dim:]) * itemsize
        status = lib.ember_stack(len(ptrs), ptrs, math.prod(shape[:dim]), inner, out._storage.ptr
                                 + out._offset * itemsize)  # fmt: skip
        if status:
            raise_status(status, "stack", out._dtype.code)

    every = dict.fromkeys(DTYPE_NAMES)
    numeric = dict.fromkeys(DTYPE_NAMES[1:])
    return {
        "copy_": {**dict.fromkeys(every, copy_), **dict.fromkeys(limited.NAMES, limited.copy_)},
        "fill_": {**dict.fromkeys(every, fill_), **dict.fromkeys(limited.NAMES, limited.fill_)},
        "arange": dict.fromkeys(numeric, arange),
        "linspace": dict.fromkeys(numeric, linspace),
        "stack": dict.fromkeys(DTYPE_NAMES, stack),
    }
