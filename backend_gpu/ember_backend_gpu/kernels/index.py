"""Glue for the indexing kernels: gather/scatter/scatter_add, index_select/index_add,
take/put_, nonzero.

The runners (ember/dispatcher/kinds/index.py) have wrapped dims, made index tensors int64 and
allocated the outputs; this glue checks the shapes the kernels rely on, launches, then reads the
status word: an out-of-range index raises IndexError naming the first bad value (nothing out of
bounds was touched). index_select and index_add run the gather and scatter kernels with an index
broadcast (stride 0) over every dim but ``dim``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import launch
from ..codegen.prelude import INDEX_OUT_OF_RANGE
from ._args import (
    DTYPE_NAMES,
    TOKENS,
    addr,
    dims,
    first_outside,
    operand,
    raise_status,
    scalar_parts,
)


def _ix(shape, a, i, s, size: int, dim: int, xshape=(), xndim=None) -> tuple:
    """The em_ix struct: iteration shape, byte strides of the indexed tensor (a), the index (i)
    and the other tensor (s), the indexed dim's size, dim, and the flat-index shape."""
    n = math.prod(shape)
    return (
        *launch.padded(shape, fill=1),
        *launch.padded(a),
        *launch.padded(i),
        *launch.padded(s),
        *launch.padded(xshape, fill=1),
        n,
        size,
        len(shape),
        dim,
        len(xshape) if xndim is None else xndim,
        0,
    )


def build(rt) -> dict:
    def finish(dev, op, t, index, low, high, what) -> None:
        status = rt.read_status(dev)
        if not status:
            return
        detail = ""
        if status == INDEX_OUT_OF_RANGE:
            bad = first_outside(rt, index, low, high)
            detail = "" if bad is None else what.format(bad=bad)
        raise_status(status, op, t._dtype.name, detail)

    def along(op, dev, t, index, dim, size):
        finish(
            dev,
            op,
            t,
            index,
            0,
            size,
            f"index {{bad}} is out of bounds for dim {dim} with size {size}",
        )

    def flat(op, dev, t, index, n):
        finish(dev, op, t, index, -n, n, f"index {{bad}} is out of range for {n} elements")

    def gather_like(op, out, x, dim, index, istrides):
        """out[p] = x[p with p[dim] = index[p]] over out's shape."""
        dev = out._storage.device.index or 0
        shape, ostr = dims(out)
        _, xstr = dims(x)
        size = (x._shape or (1,))[dim]
        if math.prod(shape) == 0:
            return
        g = _ix(shape, xstr, istrides, ostr, size, dim)
        rt.launch_1d(
            dev,
            f"em_gather_{TOKENS[x._dtype.code]}",
            math.prod(shape),
            addr(out),
            addr(x),
            addr(index),
            rt.status_word(dev),
            *g,
        )
        along(op, dev, x, index, dim, size)

    def scatter_like(op, out, dim, index, src, shape, istrides, alpha, add):
        dev = out._storage.device.index or 0
        _, ostr = dims(out)
        _, sstr = dims(src)
        size = (out._shape or (1,))[dim]
        if math.prod(shape) == 0:
            return
        g = _ix(shape, ostr, istrides, sstr, size, dim)
        alpha_f, alpha_i = scalar_parts(out._dtype.code, alpha)
        rt.launch_1d(
            dev,
            f"em_scatter_{TOKENS[out._dtype.code]}",
            math.prod(shape),
            addr(out),
            addr(src),
            addr(index),
            rt.status_word(dev),
            *g,
            alpha_f,
            alpha_i,
            int(add),
        )
        along(op, dev, out, index, dim, size)

    def gather(out, x, dim, index):
        gather_like("gather", out, x, dim, index, dims(index)[1])

    def make_scatter(op: str, add: bool):
        def scatter(out, dim, index, src):
            shape, istr = dims(index)
            scatter_like(op, out, dim, index, src, shape, istr, 1, add)

        scatter.__qualname__ = f"cuda.{op}"
        return scatter

    def along_index(t, index, dim) -> tuple:
        """Byte strides of a 1-d index broadcast over t's dims, running along dim."""
        strides = [0] * max(len(t._shape), 1)
        strides[dim] = index._stride[0] * 8
        return tuple(strides)

    def index_select(out, x, dim, index):
        n = index._shape[0]
        if not x._shape and n != 1:
            raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {n}")
        gather_like("index_select", out, x, dim, index, along_index(out, index, dim))

    def index_add(out, dim, index, source, alpha=1):
        n = index._shape[0]
        oshape, sshape = out._shape or (1,), source._shape or (1,)
        if sshape != oshape[:dim] + (n,) + oshape[dim + 1 :]:
            raise RuntimeError(
                f"index_add(): source {list(source._shape)} must have the shape of self "
                f"{list(out._shape)} except at dim {dim}, where it must have the index's length "
                f"{n}"
            )
        scatter_like(
            "index_add",
            out,
            dim,
            index,
            source,
            sshape,
            along_index(source, index, dim),
            alpha,
            True,
        )

    def flat_args(x, index, other):
        shape, istr = dims(index)
        _, ostr = dims(other)
        xshape, xstr = dims(x)
        n = math.prod(x._shape)
        return shape, _ix(shape, xstr, istr, ostr, n, -1, xshape), n

    def take(out, x, index):
        dev = out._storage.device.index or 0
        shape, g, n = flat_args(x, index, out)
        if math.prod(shape):
            rt.launch_1d(
                dev,
                f"em_take_{TOKENS[x._dtype.code]}",
                math.prod(shape),
                addr(out),
                addr(x),
                addr(index),
                rt.status_word(dev),
                *g,
            )
            flat("take", dev, x, index, n)

    def put_(x, index, source, accumulate):
        if source._shape != index._shape:
            raise RuntimeError(
                f"put_(): source {list(source._shape)} must have the index's shape "
                f"{list(index._shape)}"
            )
        dev = x._storage.device.index or 0
        shape, g, n = flat_args(x, index, source)
        if not math.prod(shape):
            return
        # Nothing is written when an index is bad: check them all first.
        rt.launch_1d(dev, "em_check_flat", math.prod(shape), addr(index), rt.status_word(dev), *g)
        flat("put_", dev, x, index, n)
        rt.launch_1d(
            dev,
            f"em_put_{TOKENS[x._dtype.code]}",
            math.prod(shape),
            addr(x),
            addr(source),
            addr(index),
            rt.status_word(dev),
            *g,
            int(accumulate),
        )

    def nonzero(out, x):
        dev = out._storage.device.index or 0
        n = math.prod(x._shape)
        count = out._shape[0]
        if not n:
            return
        scratch = rt.scratch(dev, 16 * n)
        flags, incl = scratch, scratch + 8 * n
        shape = x._shape or (1,)
        contiguous = tuple(8 * math.prod(shape[d + 1 :]) for d in range(len(shape)))
        run_strided_flags(dev, x, shape, flags, contiguous)
        rows = launch.rows_plan((n,), 0, (8,), (8,), rt.sm_count(dev))
        args, blocks, threads = rows
        rt.launch(dev, "em_scan_cumsum_i64", blocks, threads, incl, flags, *args)
        total = np.zeros(1, np.int64)
        rt.read(dev, total, incl + 8 * (n - 1))
        if int(total[0]) != count:
            raise RuntimeError(
                f"nonzero(): found a different number of non-zero elements ({int(total[0])}) "
                f"than count_nonzero ({count}) in {list(x._shape)} {x._dtype.name}: was the "
                "input modified concurrently?"
            )
        if count and x._shape:
            nd = launch.nd_args(x._shape, [()])
            rt.launch_1d(dev, "em_nz_write", n, addr(out), incl, *nd)

    def run_strided_flags(dev, x, shape, flags, contiguous):
        from ._args import run_strided

        run_strided(
            rt,
            dev,
            f"em_nz_flags_{TOKENS[x._dtype.code]}",
            shape,
            [(flags, contiguous, 0), operand(x, x._dtype.code, shape)],
        )

    kernels = {
        "gather": gather,
        "scatter": make_scatter("scatter", False),
        "scatter_add": make_scatter("scatter_add", True),
        "index_select": index_select,
        "index_add": index_add,
        "take": take,
        "put_": put_,
        "nonzero": nonzero,
    }
    return {name: dict.fromkeys(DTYPE_NAMES, fn) for name, fn in kernels.items()}
