"""Glue for copy/cast, fill, arange and linspace (clc/copy.cl).

``copy_(dst, src)``: src broadcast to dst's shape, any dtypes, same device; a contiguous copy
without a cast is a plain ``clEnqueueCopyBuffer``.
"""

from __future__ import annotations

import math

from ..programs import source
from ._launch import (
    DTYPE_NAMES,
    FLOAT_CODES,
    NO_DIMS,
    TOKENS,
    device_of,
    offset,
    run_strided,
    storage_scalar,
)


def _copies_source(src: str, targets) -> str:
    """The copies from ``src`` to each of ``targets`` (kernels ``copy_to_<dst>``): one program
    per source, as PoCL pays ~0.4 s a program and a few hundredths a kernel in it."""
    body = "".join(f"#define D {dst}\n{source('copy.cl')}#undef D\n" for dst in targets)
    return f"#define S {src}\n{body}"


def _copy_kernel(dev, src: str, dst: str):
    """The kernel copying dtype token ``src`` to ``dst`` on ``dev``."""
    programs = dev.programs
    programs.check_dtypes((src, dst), "copy_")
    kernels = programs.get(("copy", src), lambda: _copies_source(src, programs.usable(TOKENS)))
    return kernels[f"copy_to_{dst}"]


def _one_source(token: str) -> str:
    return f"#define T {token}\n" + source("copy.cl")


def contiguous_strides(shape) -> tuple:
    """Row-major strides (elements) of ``shape``."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def convert(dev, dst, dst_code: int, src, src_code: int, shape, strides, dst_strides=None) -> None:
    """Copy the elements of one strided layout into another (contiguous unless ``dst_strides``
    is given), casting between dtypes.

    ``dst`` and ``src`` are ``(buffer, element offset)`` pairs; strides are in elements (matrix
    products pack and convert their operands with this, accumulating kernels widen half types).
    """
    s, d = TOKENS[src_code], TOKENS[dst_code]
    kernel = _copy_kernel(dev, s, d)
    if dst_strides is None:
        dst_strides = contiguous_strides(shape)
    layouts = [(*dst, tuple(dst_strides)), (*src, tuple(strides))]
    run_strided(dev, kernel, tuple(shape), layouts)


def _overlap(dst, src, nbytes: int) -> bool:
    """Whether two contiguous ranges of one buffer overlap (clEnqueueCopyBuffer refuses them)."""
    if dst._storage.handle != src._storage.handle:
        return False
    gap = (offset(dst) - offset(src)) * dst._dtype.itemsize
    return abs(gap) < nbytes


def build(runtime) -> dict:
    cl = runtime._cl

    def copy_(dst, src):
        dev = device_of(runtime, dst)
        dc, sc = dst._dtype.code, src._dtype.code
        n = math.prod(dst._shape)
        if not n:
            return  # clEnqueueCopyBuffer refuses 0 bytes
        size = dst._dtype.itemsize
        if dst._contig and src._contig and dc == sc and not _overlap(dst, src, n * size):
            cl.enqueue_copy(
                dev.queue, dst._storage.handle, src._storage.handle, byte_count=n * size,
                src_offset=offset(src) * size, dst_offset=offset(dst) * size,
            )  # fmt: skip
            return
        kernel = _copy_kernel(dev, TOKENS[sc], TOKENS[dc])
        if dst._contig and src._contig:
            dev.launch(
                kernel, n, dst._storage.handle, offset(dst), NO_DIMS,
                src._storage.handle, offset(src), NO_DIMS, NO_DIMS, 0, n,
            )  # fmt: skip
        else:
            layouts = [
                (dst._storage.handle, offset(dst), dst._stride),
                (src._storage.handle, offset(src), src._stride),
            ]
            run_strided(dev, kernel, dst._shape, layouts)

    def fill_(out, value):
        dev = device_of(runtime, out)
        token = TOKENS[out._dtype.code]
        kernels = dev.programs.get(("one", token), lambda: _one_source(token))
        # As the CPU: a float dtype converts the value from float, the others from int.
        code = out._dtype.code
        bits = storage_scalar(code, float(value) if code in FLOAT_CODES else int(value))
        n = math.prod(out._shape)
        if out._contig:
            dev.launch(
                kernels["fill"], n, out._storage.handle, offset(out), NO_DIMS, NO_DIMS, 0, n, bits
            )
        else:
            layouts = [(out._storage.handle, offset(out), out._stride)]
            run_strided(dev, kernels["fill"], out._shape, layouts, bits)

    def arange(out, start, step):
        dev = device_of(runtime, out)
        code = out._dtype.code
        token = TOKENS[code]
        kernels = dev.programs.get(("one", token), lambda: _one_source(token))
        n = math.prod(out._shape)
        floats = code in FLOAT_CODES
        dev.launch(
            kernels["arange"], n, out._storage.handle, offset(out),
            float(start) if floats else 0.0, float(step) if floats else 0.0,
            0 if floats else int(start), 0 if floats else int(step), n,
        )  # fmt: skip

    def linspace(out, start, end):
        dev = device_of(runtime, out)
        token = TOKENS[out._dtype.code]
        kernels = dev.programs.get(("one", token), lambda: _one_source(token))
        n = math.prod(out._shape)
        dev.launch(
            kernels["linspace"], n, out._storage.handle, offset(out), float(start), float(end), n
        )

    every = dict.fromkeys(DTYPE_NAMES)
    numeric = dict.fromkeys(DTYPE_NAMES[1:])
    return {
        "copy_": dict.fromkeys(every, copy_),
        "fill_": dict.fromkeys(every, fill_),
        "arange": dict.fromkeys(numeric, arange),
        "linspace": dict.fromkeys(numeric, linspace),
    }
