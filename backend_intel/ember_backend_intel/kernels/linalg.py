"""Glue for mm and bmm: CLBlast's (batched) GEMM for floating dtypes, the built-in tiled kernel
(clc/gemm.cl) for integers and when CLBlast is missing.

Kernel convention: ``kernel(out, a, b)``, ``out`` contiguous ``[n, p]`` (mm) or ``[B, n, p]``
(bmm), ``a`` and ``b`` with any strides. An operand whose layout BLAS can express (rows or columns
contiguous, with a leading dimension) goes to CLBlast in place, column-major ones transposed; the
others (broadcast, negative or two non-unit strides) are packed into scratch first. float16 and
bfloat16 are converted to float32 for SGEMM and rounded back, as the CPU plugin does.
"""

from __future__ import annotations

import warnings

from .. import clblast
from ..programs import source
from ._launch import DTYPE_NAMES, TOKENS, device_of, offset
from .copy import convert

FLOAT32, FLOAT64 = 8, 9
HALF = (6, 7)
TILE = 16  # clc/gemm.cl's tile edge


def blas_layout(rows: int, cols: int, rs: int, cs: int):
    """``(transpose, leading dimension)`` describing a rows x cols matrix with strides (rs, cs) in
    row-major BLAS, or None when none does. A size-1 dimension's stride is free."""
    if (cols == 1 or cs == 1) and (rows == 1 or rs >= cols):
        return clblast.NO_TRANS, cols if rows == 1 else rs
    if (rows == 1 or rs == 1) and (cols == 1 or cs >= rows):
        return clblast.TRANS, rows if cols == 1 else cs
    return None


class _Gemm:
    """One product ``out[B, n, p] = a[B, n, k] @ b[B, k, p]`` on one device."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.blas = None
        self.missing = None
        try:
            self.blas = clblast.load()
        except OSError as exc:
            self.missing = str(exc)
        self._warned = False

    def __call__(self, name, out, a, b, batch, sa, sb):
        n, k = a._shape[-2:]
        p = b._shape[-1]
        if not (n and p and batch):
            return
        dev = device_of(self.runtime, out)
        code = a._dtype.code
        if code in (*HALF, FLOAT32, FLOAT64) and k and self.blas is not None:
            self._clblast(name, dev, out, a, b, batch, (n, k, p), sa, sb)
            return
        if code in (*HALF, FLOAT32, FLOAT64) and k and not self._warned:
            self._warned = True
            warnings.warn(
                f"xpu: {self.missing}; matrix products use ember's built-in OpenCL kernel, "
                "which is slower",
                RuntimeWarning,
                stacklevel=2,
            )
        tiled(dev, out, a, b, batch, (n, k, p), sa, sb)

    def _clblast(self, name, dev, out, a, b, batch, dims, sa, sb):
        n, k, p = dims
        code = a._dtype.code
        work = FLOAT32 if code in HALF else code
        mats = [(a, n, k, sa), (b, k, p, sb)]
        # Scratch: operands BLAS cannot take as they are (or in another dtype), and a float32
        # result for half dtypes.
        needs = [self._needs_pack(work, t, rows, cols, st) for t, rows, cols, st in mats]
        item = 8 if work == FLOAT64 else 4
        sizes = [
            item * (1 if st[0] == 0 else batch) * rows * cols if packed else 0
            for packed, (t, rows, cols, st) in zip(needs, mats)
        ] + [item * batch * n * p if code in HALF else 0]
        with dev.scratch(*(size or 1 for size in sizes)) as scratch:
            operands = []
            for packed, buffer, (t, rows, cols, st) in zip(needs, scratch, mats):
                if packed:
                    copies = 1 if st[0] == 0 else batch
                    convert(dev, (buffer, 0), work, (t._storage.handle, offset(t)), code,
                            (copies, rows, cols), st)  # fmt: skip
                    bs = 0 if st[0] == 0 else rows * cols
                    operands.append((buffer, 0, clblast.NO_TRANS, cols, bs))
                else:
                    trans, ld = blas_layout(rows, cols, st[1], st[2])
                    operands.append((t._storage.handle, offset(t), trans, ld, st[0]))
            if code in HALF:
                result = (scratch[2], 0)
            else:
                result = (out._storage.handle, offset(out))
            self._call(name, dev, work, operands, result, batch, dims)
            if code in HALF:
                convert(dev, (out._storage.handle, offset(out)), code, result, FLOAT32,
                        (batch * n * p,), (1,))  # fmt: skip

    @staticmethod
    def _needs_pack(work: int, t, rows: int, cols: int, st: tuple) -> bool:
        return (
            t._dtype.code != work
            or st[0] < 0
            or any(s < 0 for s in st[1:])
            or blas_layout(rows, cols, st[1], st[2]) is None
        )

    def _call(self, name, dev, work, operands, result, batch, dims):
        n, k, p = dims
        blas = self.blas
        prefix = "D" if work == FLOAT64 else "S"
        (ab, ao, at, ald, abs_), (bb, bo, bt, bld, bbs) = operands
        head = (clblast.ROW_MAJOR, at, bt, n, p, k, 1.0)
        a_part, b_part = (blas.mem(ab), ao, ald), (blas.mem(bb), bo, bld)
        c_part = (blas.mem(result[0]), result[1], p)
        tail = (blas.queue(dev), blas.ffi.NULL)
        if batch == 1:
            call = getattr(blas.lib, f"CLBlast{prefix}gemm")
            status = call(*head, *a_part, *b_part, 0.0, *c_part, *tail)
        else:
            call = getattr(blas.lib, f"CLBlast{prefix}gemmStridedBatched")
            status = call(
                *head, *a_part, abs_, *b_part, bbs, 0.0, *c_part, n * p, batch, *tail
            )  # fmt: skip
        if status in clblast.NO_MEMORY:
            raise MemoryError(f"{name}: CLBlast ran out of device memory (status {status})")
        if status != clblast.SUCCESS:
            raise RuntimeError(
                f"{name}: CLBlast failed with status {status} ({DTYPE_NAMES[work]}, batch {batch}, "
                f"{n}x{k} @ {k}x{p})"
            )


def tiled(dev, out, a, b, batch, dims, sa, sb) -> None:
    """The built-in kernel: any strides, any numeric dtype."""
    n, k, p = dims
    token = TOKENS[a._dtype.code]
    kernel = dev.programs.get(("gemm", token), lambda: f"#define T {token}\n" + source("gemm.cl"))[
        "gemm"
    ]
    grid = (-(-p // TILE) * TILE, -(-n // TILE) * TILE, batch)
    kernel.fn(
        dev.queue, grid, (TILE, TILE, 1), out._storage.handle, offset(out), n * p, p,
        a._storage.handle, offset(a), *sa, b._storage.handle, offset(b), *sb, n, k, p,
    )  # fmt: skip


def build(runtime) -> dict:
    gemm = _Gemm(runtime)

    def mm(out, a, b):
        gemm("mm", out, a, b, 1, (0, *a._stride), (0, *b._stride))

    def bmm(out, a, b):
        gemm("bmm", out, a, b, a._shape[0], a._stride, b._stride)

    mm.__qualname__, bmm.__qualname__ = "xpu.mm", "xpu.bmm"
    numeric = DTYPE_NAMES[1:]
    return {"mm": dict.fromkeys(numeric, mm), "bmm": dict.fromkeys(numeric, bmm)}
