"""Glue for the indexing kernels (csrc/index.c): gather/scatter, index_select/index_add,
take/put_, nonzero.

The runners (ember/dispatcher/kinds/index.py) have wrapped dims, made index tensors int64 and
allocated the outputs; this glue checks the shapes the C loops rely on, so that a bad call raises
instead of reading out of bounds, and turns status codes into exceptions. A 0-d tensor is passed
as one element of a 1-d tensor where the C side wants a dim to index along.
"""

from __future__ import annotations

import math

from ._args import BAD_ARGUMENT, DTYPE_NAMES, INDEX_OUT_OF_RANGE, addr, raise_status, scalar_parts

# ember_scatter's modes (api_index.h's EM_SCATTER_*), by scatter_reduce's names.
SCATTER_MODES = {"copy": 0, "sum": 1, "prod": 2, "amax": 3, "amin": 4}


def _dims(t) -> tuple[tuple, tuple]:
    return (t._shape, t._stride) if t._shape else ((1,), (1,))


def _check_index_add_shapes(out, dim: int, n: int, source) -> None:
    oshape = out._shape or (1,)
    sshape = source._shape or (1,)
    expected = oshape[:dim] + (n,) + oshape[dim + 1 :]
    if sshape != expected:
        raise RuntimeError(
            f"index_add(): source {list(source._shape)} must have the shape of self "
            f"{list(out._shape)} except at dim {dim}, where it must have the index's length {n}"
        )


def build(ffi, lib) -> dict:
    def bad_value(index, low: int, high: int):
        """The first index value outside [low, high), looked up after a kernel reported one."""
        found = ffi.new("int64_t *")
        shape, stride = index._shape, index._stride
        if lib.ember_index_find_bad(len(shape), shape, addr(index), stride, low, high, found):
            return found[0]
        return None

    def fail_dim(status: int, op: str, x, index, dim: int, size: int) -> None:
        """Raise for a kernel status of an op that indexes along dim (no wrapping)."""
        bad = bad_value(index, 0, size) if status == INDEX_OUT_OF_RANGE else None
        detail = (
            "" if bad is None else f"index {bad} is out of bounds for dim {dim} with size {size}"
        )
        raise_status(status, op, x._dtype.code, detail)

    def fail_flat(status: int, op: str, x, index) -> None:
        """Raise for a kernel status of take/put_ (flat indices, negative ones wrap)."""
        n = math.prod(x._shape)
        bad = bad_value(index, -n, n) if status == INDEX_OUT_OF_RANGE else None
        detail = "" if bad is None else f"index {bad} is out of range for {n} elements"
        raise_status(status, op, x._dtype.code, detail)

    def gather(out, x, dim, index):
        xshape, xstride = _dims(x)
        ishape, istride = _dims(index)
        status = lib.ember_gather(
            x._dtype.code, len(xshape), dim, xshape, addr(x), xstride, ishape, addr(index),
            istride, addr(out),
        )  # fmt: skip
        if status:
            fail_dim(status, "gather", x, index, dim, xshape[dim])

    def run_scatter(op: str, mode: int, out, dim, index, src) -> None:
        oshape, ostride = _dims(out)
        ishape, istride = _dims(index)
        _, sstride = _dims(src)
        status = lib.ember_scatter(
            out._dtype.code, mode, len(oshape), dim, oshape, addr(out), ostride, ishape,
            addr(index), istride, addr(src), sstride,
        )  # fmt: skip
        if status:
            fail_dim(status, op, out, index, dim, oshape[dim])

    def make_scatter(op: str, mode: int):
        def scatter(out, dim, index, src):
            run_scatter(op, mode, out, dim, index, src)

        scatter.__qualname__ = f"cpu.{op}"
        return scatter

    def scatter_reduce(out, dim, index, src, reduce):
        """out (a copy of self, its scattered places already at the identity when include_self
        is False) folded with src at index along dim; reduce is sum, prod, amax or amin."""
        run_scatter("scatter_reduce", SCATTER_MODES[reduce], out, dim, index, src)

    def index_select(out, x, dim, index):
        n = index._shape[0]
        if not x._shape and n != 1:
            raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {n}")
        xshape, xstride = _dims(x)
        status = lib.ember_index_select(
            x._dtype.code, len(xshape), dim, xshape, addr(x), xstride, n, addr(index),
            index._stride[0], addr(out),
        )  # fmt: skip
        if status:
            fail_dim(status, "index_select", x, index, dim, xshape[dim])

    def index_add(out, dim, index, source, alpha=1):
        n = index._shape[0]
        _check_index_add_shapes(out, dim, n, source)
        oshape, ostride = _dims(out)
        _, sstride = _dims(source)
        alpha_f, alpha_i = scalar_parts(out._dtype.code, alpha)
        status = lib.ember_index_add(
            out._dtype.code, len(oshape), dim, oshape, addr(out), ostride, n, addr(index),
            index._stride[0], addr(source), sstride, alpha_f, alpha_i,
        )  # fmt: skip
        if status:
            fail_dim(status, "index_add", out, index, dim, oshape[dim])

    def take(out, x, index):
        status = lib.ember_take(
            x._dtype.code, len(x._shape), x._shape, addr(x), x._stride, len(index._shape),
            index._shape, addr(index), index._stride, addr(out),
        )  # fmt: skip
        if status:
            fail_flat(status, "take", x, index)

    def put_(x, index, source, accumulate):
        if source._shape != index._shape:
            raise RuntimeError(
                f"put_(): source {list(source._shape)} must have the index's shape "
                f"{list(index._shape)}"
            )
        status = lib.ember_put(
            x._dtype.code, int(accumulate), len(x._shape), x._shape, addr(x), x._stride,
            len(index._shape), index._shape, addr(index), index._stride, addr(source),
            source._stride,
        )  # fmt: skip
        if status:
            fail_flat(status, "put_", x, index)

    def nonzero(out, x):
        status = lib.ember_nonzero(
            x._dtype.code, len(x._shape), x._shape, addr(x), x._stride, out._shape[0], addr(out)
        )
        if status == BAD_ARGUMENT:
            raise RuntimeError(
                f"nonzero(): found a different number of non-zero elements than count_nonzero "
                f"({out._shape[0]}) in {list(x._shape)} {x._dtype.name}: was the input modified "
                "concurrently?"
            )
        if status:
            raise_status(status, "nonzero", x._dtype.code)

    kernels = {
        "gather": gather,
        "scatter": make_scatter("scatter", SCATTER_MODES["copy"]),
        "scatter_add": make_scatter("scatter_add", SCATTER_MODES["sum"]),
        "scatter_reduce": scatter_reduce,
        "index_select": index_select,
        "index_add": index_add,
        "take": take,
        "put_": put_,
        "nonzero": nonzero,
    }
    return {name: dict.fromkeys(DTYPE_NAMES, fn) for name, fn in kernels.items()}
