"""Glue for sort (a bitonic network over (key, position) pairs, see codegen/sort.py) and
searchsorted. The runners have wrapped dims and allocated the outputs; sort is called for
non-empty inputs only."""

from __future__ import annotations

import math

from .. import launch
from ..codegen import sort as gen
from ._args import DTYPE_NAMES, TOKENS, addr, dims

INT32 = DTYPE_NAMES.index("int32")
MAX_SORT_LENGTH = 2**31 - 1  # positions are 32-bit


def _lines(x, values, indices, dim: int) -> tuple:
    """The em_lines struct for sorting x's lines along dim into values and indices."""
    shape, xs = dims(x)
    _, vs = dims(values)
    _, is_ = dims(indices)
    other = [d for d in range(len(shape)) if d != dim]
    lshape, (lx, lv, li) = launch.coalesce(
        [shape[d] for d in other], [[s[d] for d in other] for s in (xs, vs, is_)]
    )
    n_lines = math.prod(lshape)
    if lshape == (1,):
        lshape, lx, lv, li = (), (), (), ()
    args = (
        *launch.padded(lshape, fill=1),
        *launch.padded(lx),
        *launch.padded(lv),
        *launch.padded(li),
        n_lines,
        shape[dim],
        xs[dim],
        vs[dim],
        is_[dim],
        len(lshape),
        0,
    )
    return args, n_lines, shape[dim]


def build(rt) -> dict:
    def sort(values, indices, x, dim, descending, stable):
        # The network orders (key, position) pairs: always stable.
        dev = values._storage.device.index or 0
        dim = dim if x._shape else 0
        args, n_lines, length = _lines(x, values, indices, dim)
        if n_lines * length == 0:
            return
        if length > MAX_SORT_LENGTH:
            raise RuntimeError(
                f"sort(): the CUDA kernel sorts at most {MAX_SORT_LENGTH} elements along a dim, "
                f"got {length} (shape {list(x._shape)})"
            )
        padded = launch.next_pow2(length)
        total = n_lines * padded
        keys = rt.scratch(dev, total * 12 + 256)
        pos = keys + total * 8
        token = TOKENS[x._dtype.code]
        rt.launch_1d(
            dev,
            f"em_sort_keys_{token}",
            total,
            keys,
            pos,
            addr(x),
            *args,
            padded,
            int(bool(descending)),
        )
        for step in launch.sort_steps(padded, gen.CHUNK):
            if step[0] == "block":
                _, k_lo, k_hi, j_first = step
                c = min(padded, gen.CHUNK)
                rt.launch(
                    dev,
                    "em_bitonic_block",
                    total // c,
                    c // 2,
                    keys,
                    pos,
                    padded,
                    k_lo,
                    k_hi,
                    j_first,
                )
            else:
                _, k, j = step
                rt.launch_1d(dev, "em_bitonic_step", total, keys, pos, total, padded, k, j)
        rt.launch_1d(
            dev,
            f"em_sort_write_{token}",
            n_lines * length,
            addr(values),
            addr(indices),
            addr(x),
            pos,
            *args,
            padded,
        )

    def searchsorted(out, sorted_sequence, values, right):
        seq = sorted_sequence
        if not seq._shape:
            raise RuntimeError(
                "searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                "dimensions of boundaries tensor and input value tensor must match, but we got "
                f"boundaries tensor [] and input value tensor {list(values._shape)}"
            )
        dev = out._storage.device.index or 0
        shape, vs = dims(values)
        _, os_ = dims(out)
        size = seq._dtype.itemsize
        n = math.prod(shape)
        if not n:
            return
        if len(seq._shape) > 1:  # one row per value: the values' leading dims
            rows = tuple(s * size for s in seq._stride[:-1]) + (0,)
        else:
            rows = (0,) * len(shape)
        search = (
            *launch.padded(shape, fill=1),
            *launch.padded(vs),
            *launch.padded(rows),
            *launch.padded(os_),
            n,
            seq._shape[-1],
            seq._stride[-1] * size,
            len(shape),
            int(bool(right)),
            int(out._dtype.code == INT32),
            0,
        )
        rt.launch_1d(
            dev,
            f"em_searchsorted_{TOKENS[seq._dtype.code]}",
            n,
            addr(out),
            addr(values),
            addr(seq),
            *search,
        )

    return {
        "sort": dict.fromkeys(DTYPE_NAMES, sort),
        "searchsorted": dict.fromkeys(DTYPE_NAMES[1:], searchsorted),
    }
