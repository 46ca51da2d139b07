"""Glue for the sorting kernels (clc/sort.cl): sort and searchsorted.

The runners (ember/dispatcher/kinds/index.py) have wrapped dims, allocated the outputs and
promoted searchsorted's operands to one dtype; they call sort only for non-empty inputs. The
bitonic network is always stable, so ``stable`` needs nothing more.
"""

from __future__ import annotations

import math

from ..programs import source
from . import _shared
from ._launch import DTYPE_NAMES, MAX_DIMS, TOKENS, blocks, device_of, merge_dims, offset, pack
from .copy import contiguous_strides

INT32 = DTYPE_NAMES.index("int32")


def _kernels(dev, code: int) -> dict:
    token = TOKENS[code]
    return dev.programs.get(("sort", token), lambda: f"#define T {token}\n" + source("sort.cl"))


def build(runtime) -> dict:
    def sort(values, indices, x, dim, descending, stable):
        dev = device_of(runtime, x)
        kernels = _kernels(dev, x._dtype.code)
        shape = x._shape or (1,)
        tensors = (x, values, indices)
        strides = [t._stride or (1,) for t in tensors]
        other = [d for d in range(len(shape)) if d != dim]
        lshape, (xl, vl, il) = merge_dims(
            tuple(shape[d] for d in other), [tuple(s[d] for d in other) for s in strides]
        )
        if len(lshape) > MAX_DIMS:
            raise RuntimeError(f"sort: more than {MAX_DIMS} dims besides dim {dim} once merged")
        n, lines = shape[dim], math.prod(lshape)
        xd, vd, idd = (s[dim] for s in strides)
        line = (pack(lshape), len(lshape))
        xb, xo = x._storage.handle, offset(x)
        width = 1 << (n - 1).bit_length()
        with dev.scratch(8 * lines * width, 8 * lines * width) as (keys, pos):
            dev.launch(
                kernels["sort_keys"], lines * width, keys, pos, xb, xo, pack(xl), xd, *line, n,
                width, lines, int(descending),
            )  # fmt: skip
            step = kernels["bitonic_step"]
            pairs = lines * width // 2
            k = 2
            while k <= width:
                j = k // 2
                while j:
                    dev.launch(step, pairs, keys, pos, width, k, j, pairs)
                    j //= 2
                k *= 2
            dev.launch(
                kernels["sort_gather"], lines * n, values._storage.handle, offset(values),
                pack(vl), vd, indices._storage.handle, offset(indices), pack(il), idd, xb, xo,
                pack(xl), xd, *line, pos, n, width, lines,
            )  # fmt: skip

    def searchsorted(out, sorted_sequence, values, right):
        seq = sorted_sequence
        _shared.check_sequence(seq, values)
        dev = device_of(runtime, values)
        kernels = _kernels(dev, seq._dtype.code)
        # One sequence row per value: rows follow the values' leading dims (stride 0 along the
        # values' last dim); a 1-D sequence is shared by all. out is contiguous; dims merge
        # where all three layouts allow, and past MAX_DIMS leading ones are looped over.
        vshape = values._shape
        rows = seq._stride[:-1] + (0,) if len(seq._shape) > 1 else (0,) * len(vshape)
        name = "searchsorted32" if out._dtype.code == INT32 else "searchsorted64"
        layout = [contiguous_strides(vshape), values._stride, rows]
        shape, strides = merge_dims(vshape, layout)
        for (do, dv, dr), sub, (_os, vs, rs) in blocks(shape, strides):
            n = math.prod(sub)
            dev.launch(
                kernels[name], n, out._storage.handle, offset(out) + do, values._storage.handle,
                offset(values) + dv, pack(vs), seq._storage.handle, offset(seq) + dr, pack(rs),
                seq._shape[-1], seq._stride[-1], pack(sub), len(sub), n, int(right),
            )  # fmt: skip

    sort.__qualname__, searchsorted.__qualname__ = "xpu.sort", "xpu.searchsorted"
    return {
        "sort": dict.fromkeys(DTYPE_NAMES, sort),
        "searchsorted": dict.fromkeys(DTYPE_NAMES[1:], searchsorted),
    }
