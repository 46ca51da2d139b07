"""Glue for the indexing kernels (clc/index.cl): gather/scatter, index_select/index_add,
take/put_, nonzero.

The runners (ember/dispatcher/kinds/index.py) have wrapped dims, made index tensors int64 and
allocated the outputs. Bounds are checked on the device; the glue then reads the status word back,
so a bad index raises IndexError naming the op and the value at the call, as on the CPU (one
wait for the device per call of these ops). A 0-d tensor is passed as one element of a 1-d one
where a kernel indexes along a dim.
"""

from __future__ import annotations

import contextlib
import math

from ..programs import source
from . import _shared
from ._launch import (
    DTYPE_NAMES,
    FLOAT_CODES,
    MAX_DIMS,
    TOKENS,
    check_status,
    device_of,
    fold_around,
    merge_dims,
    offset,
    pack,
)
from .copy import contiguous_strides, convert

HALF = (6, 7)
FLOAT32 = 8


def _dims(t) -> tuple[tuple, tuple]:
    return (t._shape, t._stride) if t._shape else ((1,), (1,))


def _kernels(dev, code: int, wide: bool = False) -> dict:
    """The index program of dtype ``code``; ``wide``: its adds go into a float32 destination."""
    token = TOKENS[code]
    head = f"#define T {token}\n#define LOCAL {dev.local_size}\n" + ("#define WIDE 1\n" * wide)
    return dev.programs.get(("index", token, wide), lambda: head + source("index.cl"))


@contextlib.contextmanager
def _accumulator(dev, t, add: bool = True):
    """``(kernels, buffer, element offset, shape, strides)`` for adding into ``t``: ``t`` itself,
    or for half dtypes a float32 copy narrowed back into ``t`` at the end, as the CPU does, so
    repeated adds round once."""
    code = t._dtype.code
    shape, strides = _dims(t)
    if not add or code not in HALF:
        yield _kernels(dev, code), t._storage.handle, offset(t), shape, strides
        return
    wide_strides = contiguous_strides(shape)
    here = (t._storage.handle, offset(t))
    with dev.scratch(4 * math.prod(shape)) as (wide,):
        convert(dev, (wide, 0), FLOAT32, here, code, shape, strides)
        yield _kernels(dev, code, True), wide, 0, shape, wide_strides
        convert(dev, here, code, (wide, 0), FLOAT32, shape, wide_strides, strides)


def _find_nonzero(dev, kernels, dst, x, count: int, flat: bool) -> None:
    """The nonzero kernel (one work-group) over ``x``: into ``dst`` = (buffer, element offset)
    the coordinates of ``count`` nonzeros, or with ``flat`` their row-major positions, found
    walking x's dims merged (through a contiguous copy if they stay past MAX_DIMS)."""
    n = math.prod(x._shape)
    source = (x._storage.handle, offset(x))
    shape, strides = x._shape, x._stride
    if flat:
        shape, (strides,) = merge_dims(shape, [strides])
    with contextlib.ExitStack() as stack:
        if len(shape) > MAX_DIMS:
            (copy,) = stack.enter_context(dev.scratch(x._dtype.itemsize * n))
            convert(dev, (copy, 0), x._dtype.code, source, x._dtype.code, x._shape, x._stride)
            source, shape, strides = (copy, 0), (n,), (1,)
        kernel = kernels["nonzero"]
        kernel.fn(
            dev.queue, (kernel.local,), (kernel.local,), *dst, *source, pack(shape),
            pack(strides), len(shape), n, count, int(flat),
        )  # fmt: skip


def _along_dim(dim: int, size: int):
    return lambda bad: f"index {bad} is out of bounds for dim {dim} with size {size}"


def _flat(n: int):
    return lambda bad: f"index {bad} is out of range for {n} elements"


def _flat_layout(x) -> tuple:
    """(shape, strides, ndim, numel) of x's row-major order, dims merged, for take/put_."""
    shape, (strides,) = merge_dims(x._shape, [x._stride])
    return pack(shape), pack(strides), len(shape), math.prod(x._shape)


def _lines(shape: tuple, dim: int) -> tuple[tuple, int]:
    """The shape of the lines along ``dim`` (size 1 there) and their count (0 when empty)."""
    lines_shape = shape[:dim] + (1,) + shape[dim + 1 :]
    return lines_shape, math.prod(lines_shape) if math.prod(shape) else 0


def build(runtime) -> dict:
    def launch_gather(op, out, x, dim, index, ishape, istride):
        """out[p] = x[p with p[dim] = index at p (strides ``istride``)], p over ``ishape``."""
        dev = device_of(runtime, x)
        xshape, xstride = _dims(x)
        kernel = _kernels(dev, x._dtype.code)["gather"]
        layout = [contiguous_strides(ishape), xstride, istride]
        for (do, dx, di), shape, (os, xs, ist), d in fold_around(ishape, layout, dim):
            n = math.prod(shape)
            dev.launch(
                kernel, n, out._storage.handle, offset(out) + do, pack(os), x._storage.handle,
                offset(x) + dx, pack(xs), index._storage.handle, offset(index) + di, pack(ist),
                pack(shape), len(shape), n, d, xshape[dim], dev.status,
            )  # fmt: skip
        check_status(dev, op, x._dtype.name, _along_dim(dim, xshape[dim]))

    def gather(out, x, dim, index):
        launch_gather("gather", out, x, dim, index, *_dims(index))

    def make_scatter(op: str, add: int):
        def scatter(out, dim, index, src):
            dev = device_of(runtime, out)
            ishape, istride = _dims(index)
            _, sstride = _dims(src)
            with _accumulator(dev, out, add) as (kernels, buffer, at, oshape, ostride):
                layout = [ostride, istride, sstride]
                for (do, di, ds), shape, (os, ist, ss), d in fold_around(ishape, layout, dim):
                    lines_shape, lines = _lines(shape, d)
                    dev.launch(
                        kernels["scatter"], lines, buffer, at + do, pack(os),
                        index._storage.handle, offset(index) + di, pack(ist), src._storage.handle,
                        offset(src) + ds, pack(ss), pack(lines_shape), len(lines_shape), lines, d,
                        shape[d], oshape[dim], add, dev.status,
                    )  # fmt: skip
            check_status(dev, op, out._dtype.name, _along_dim(dim, oshape[dim]))

        scatter.__qualname__ = f"xpu.{op}"
        return scatter

    def index_select(out, x, dim, index):
        n = index._shape[0]
        if not x._shape and n != 1:
            raise IndexError(f"index_select(): Index to scalar can have only 1 value, got {n}")
        xshape = _dims(x)[0]
        oshape = xshape[:dim] + (n,) + xshape[dim + 1 :]
        # A gather whose index walks dim only (stride 0 along the others).
        istride = tuple(index._stride[0] if d == dim else 0 for d in range(len(oshape)))
        launch_gather("index_select", out, x, dim, index, oshape, istride)

    def index_add(out, dim, index, source, alpha=1):
        n = index._shape[0]
        _shared.check_index_add_shapes(out, dim, n, source)
        dev = device_of(runtime, out)
        sshape, sstride = _dims(source)
        floats = out._dtype.code in FLOAT_CODES
        scale = (float(alpha), 0) if floats else (0.0, int(alpha))
        with _accumulator(dev, out) as (kernels, buffer, at, oshape, ostride):
            for (do, ds), shape, (os, ss), d in fold_around(sshape, [ostride, sstride], dim):
                lines_shape, lines = _lines(shape, d)
                dev.launch(
                    kernels["index_add"], lines, buffer, at + do, pack(os), index._storage.handle,
                    offset(index), index._stride[0], source._storage.handle, offset(source) + ds,
                    pack(ss), pack(lines_shape), len(lines_shape), lines, d, n, oshape[dim],
                    *scale, dev.status,
                )  # fmt: skip
        check_status(dev, "index_add", out._dtype.name, _along_dim(dim, oshape[dim]))

    def take(out, x, index):
        dev = device_of(runtime, x)
        xshape, xstrides, xnd, size = _flat_layout(x)
        ishape, (istride,) = merge_dims(index._shape, [index._stride])
        n = math.prod(index._shape)
        dev.launch(
            _kernels(dev, x._dtype.code)["take"], n, out._storage.handle, offset(out),
            x._storage.handle, offset(x), xshape, xstrides, xnd, size, index._storage.handle,
            offset(index), pack(ishape), pack(istride), len(ishape), n, dev.status,
        )  # fmt: skip
        check_status(dev, "take", x._dtype.name, _flat(size))

    def put_(x, index, source, accumulate):
        if source._shape != index._shape:
            raise RuntimeError(
                f"put_(): source {list(source._shape)} must have the index's shape "
                f"{list(index._shape)}"
            )
        dev = device_of(runtime, x)
        ishape, (istride, sstride) = merge_dims(index._shape, [index._stride, source._stride])
        n = math.prod(index._shape)
        size = math.prod(x._shape)
        where = (index._storage.handle, offset(index), pack(ishape), pack(istride))
        dev.launch(
            _kernels(dev, x._dtype.code)["put_check"], n, *where, len(ishape), n, size, dev.status
        )
        check_status(dev, "put_", x._dtype.name, _flat(size))
        with _accumulator(dev, x, accumulate) as (kernels, buffer, at, xshape, xstride):
            xshape, (xstride,) = merge_dims(xshape, [xstride])
            dev.launch(
                kernels["put"], 1 if accumulate else n, buffer, at, pack(xshape), pack(xstride),
                len(xshape), size, *where, source._storage.handle, offset(source),
                pack(sstride), len(ishape), n, int(accumulate),
            )  # fmt: skip

    def nonzero(out, x):
        if not x._shape:
            return  # a 0-d input gives rows of no coordinates
        dev = device_of(runtime, x)
        kernels = _kernels(dev, x._dtype.code)
        if len(x._shape) <= MAX_DIMS:
            _find_nonzero(dev, kernels, (out._storage.handle, offset(out)), x, out._shape[0], False)
            return
        # More dims than a kernel walks: find the row-major positions (x's dims merged), then
        # write the coordinates of at most MAX_DIMS dims per launch.
        count = out._shape[0]
        with dev.scratch(8 * count) as (positions,):
            _find_nonzero(dev, kernels, (positions, 0), x, count, True)
            for first in range(0, len(x._shape), MAX_DIMS):
                dims = x._shape[first : first + MAX_DIMS]
                inner = math.prod(x._shape[first + MAX_DIMS :])
                dev.launch(
                    kernels["unravel"], count, out._storage.handle, offset(out), len(x._shape),
                    first, positions, inner, pack(dims), len(dims), count,
                )  # fmt: skip

    kernels = {
        "gather": gather,
        "scatter": make_scatter("scatter", 0),
        "scatter_add": make_scatter("scatter_add", 1),
        "index_select": index_select,
        "index_add": index_add,
        "take": take,
        "put_": put_,
        "nonzero": nonzero,
    }
    for name, fn in kernels.items():
        fn.__qualname__ = f"xpu.{name}"
    return {name: dict.fromkeys(DTYPE_NAMES, fn) for name, fn in kernels.items()}
