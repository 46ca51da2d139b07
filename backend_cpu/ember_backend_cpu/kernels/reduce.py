"""Glue for the reduction and scan kernels (csrc/reduce.c).

Calling conventions (set by ember's reduction runners, which validate, wrap dims and allocate):

- sum, prod, amax, amin, all, any: ``kernel(out, x, dims)``; ``out`` has x's rank with size 1 on
  the reduced ``dims`` (a sorted tuple).
- max, min: ``kernel(values, indices, x, dim)``; argmax, argmin: ``kernel(indices, x, dim)``.
- cumsum, cumprod: ``kernel(out, x, dim)``, ``out`` of x's shape and dtype.
"""

from __future__ import annotations

from ._args import DTYPE_NAMES, addr, raise_status

# Kernel families, numbered as in api_reduce.h.
REDUCE, INDEX, SCAN = 0, 1, 2


def _make_reduce(lib, code: int, name: str):
    call = lib.ember_reduce

    def kernel(out, x, dims):
        mask = 0
        for d in dims:
            mask |= 1 << d
        status = call(
            code,
            x._dtype.code,
            len(x._shape),
            x._shape,
            addr(out),
            out._dtype.code,
            out._stride,
            addr(x),
            x._stride,
            mask,
        )
        if status:
            raise_status(status, name, x._dtype.code)

    return kernel


def _make_index(lib, code: int, name: str):
    call = lib.ember_reduce_index

    def run(values_addr, indices, x, dim):
        status = call(
            code,
            x._dtype.code,
            len(x._shape),
            x._shape,
            values_addr,
            addr(indices),
            indices._stride,
            addr(x),
            x._stride,
            dim,
        )
        if status:
            raise_status(status, name, x._dtype.code)

    if name.startswith("arg"):

        def kernel(indices, x, dim):
            run(0, indices, x, dim)

    else:

        def kernel(values, indices, x, dim):
            run(addr(values), indices, x, dim)

    return kernel


def _make_scan(lib, code: int, name: str):
    call = lib.ember_scan

    def kernel(out, x, dim):
        shape = x._shape
        status = call(
            code, x._dtype.code, len(shape), shape, addr(out), out._stride, addr(x), x._stride, dim
        )
        if status:
            raise_status(status, name, x._dtype.code)

    return kernel


MAKERS = {REDUCE: _make_reduce, INDEX: _make_index, SCAN: _make_scan}


def build(ffi, lib) -> dict:
    table = {}
    for family, make in MAKERS.items():
        names = ffi.string(lib.ember_reduce_names(family)).decode().split(",")
        for code, name in enumerate(n for n in names if n):
            kernel = make(lib, code, name)
            kernel.__qualname__ = f"cpu.{name}"
            table[name] = {
                dname: kernel
                for dcode, dname in enumerate(DTYPE_NAMES)
                if lib.ember_reduce_supports(family, code, dcode)
            }
    return table
