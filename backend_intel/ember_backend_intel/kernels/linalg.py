"""Glue for mm and bmm: CLBlast's (batched) GEMM for floating dtypes, the built-in tiled kernel
(clc/gemm.cl) for integers and when CLBlast is missing; complex64/complex128 only through
CLBlast (C/Zgemm).

Kernel convention: ``kernel(out, a, b)``, ``out`` contiguous ``[n, p]`` (mm) or ``[B, n, p]``
(bmm), ``a`` and ``b`` with any strides. An operand whose layout BLAS can express (rows or columns
contiguous, with a leading dimension) goes to CLBlast in place, column-major ones transposed; the
others (broadcast, negative or two non-unit strides) are packed into scratch first. float16 and
bfloat16 are converted to float32 for SGEMM and rounded back, as the CPU plugin does.

The complex kernels read lazy conjugate and negative bits (dispatcher/mathbits.py,
``reads_bits``): a conjugate view whose memory is column-major (``x.mH``, ``x.conj().T``) is
CLBlast's conjugate transpose, a negative bit folds into alpha. CLBlast has no conjugate without
a transpose, so the math-bits layer materializes the other conjugate views (``takes_bits``).
"""

from __future__ import annotations

import warnings

from .. import clblast
from ..programs import source
from ._launch import DTYPE_NAMES, TOKENS, device_of, offset
from .copy import convert

FLOAT32, FLOAT64, COMPLEX64, COMPLEX128 = 8, 9, 10, 11
HALF = (6, 7)
# CLBlast's routine prefix per dtype code it runs (half dtypes run as float32).
PREFIX = {FLOAT32: "S", FLOAT64: "D", COMPLEX64: "C", COMPLEX128: "Z"}
COMPLEX = (COMPLEX64, COMPLEX128)
INT64 = 5  # packs complex operands bit for bit, as 8-byte words
TILE = 16  # clc/gemm.cl's tile edge


def blas_layout(rows: int, cols: int, rs: int, cs: int):
    """``(transpose, leading dimension)`` describing a rows x cols matrix with strides (rs, cs) in
    row-major BLAS, or None when none does. A size-1 dimension's stride is free."""
    if (cols == 1 or cs == 1) and (rows == 1 or rs >= cols):
        return clblast.NO_TRANS, cols if rows == 1 else rs
    if (rows == 1 or rs == 1) and (cols == 1 or cs >= rows):
        return clblast.TRANS, rows if cols == 1 else cs
    return None


def conj_layout(rows: int, cols: int, rs: int, cs: int):
    """The leading dimension of a column-major rows x cols matrix (a conjugate view CLBlast
    reads as the conjugate transpose of its memory), or None."""
    if (rows == 1 or rs == 1) and (cols == 1 or cs >= rows):
        return max(1, rows if cols == 1 else cs)
    return None


def takes_bits(t) -> bool:
    """Whether the complex kernel reads this flagged operand as it is (see the module doc)."""
    rows, cols = t._shape[-2:]
    return not t._conj_bit or conj_layout(rows, cols, *t._stride[-2:]) is not None


def _layout(t, rows: int, cols: int, st: tuple):
    """``(transpose, leading dimension)`` of an operand CLBlast takes as it is, or None."""
    if getattr(t, "_conj_bit", False):
        ld = conj_layout(rows, cols, st[1], st[2])
        return None if ld is None else (clblast.CONJ_TRANS, ld)
    return blas_layout(rows, cols, st[1], st[2])


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
        if code in (*HALF, *PREFIX) and k and self.blas is not None:
            self._clblast(name, dev, out, a, b, batch, (n, k, p), sa, sb)
            return
        if code in COMPLEX:  # k == 0: a sum of nothing
            size = out._dtype.itemsize
            fill = self.runtime._cl.enqueue_fill_buffer
            fill(dev.queue, out._storage.handle, b"\0", offset(out) * size, batch * n * p * size)
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
        item = 4 if work == FLOAT32 else a._dtype.itemsize
        sizes = [
            item * (1 if st[0] == 0 else batch) * rows * cols if packed else 0
            for packed, (t, rows, cols, st) in zip(needs, mats)
        ] + [item * batch * n * p if code in HALF else 0]
        with dev.scratch(*(size or 1 for size in sizes)) as scratch:
            operands = []
            for packed, buffer, (t, rows, cols, st) in zip(needs, scratch, mats):
                if packed:
                    copies = 1 if st[0] == 0 else batch
                    _pack(dev, buffer, work, t, (copies, rows, cols), st)
                    bs = 0 if st[0] == 0 else rows * cols
                    operands.append((buffer, 0, clblast.NO_TRANS, cols, bs))
                else:
                    trans, ld = _layout(t, rows, cols, st)
                    operands.append((t._storage.handle, offset(t), trans, ld, st[0]))
            if code in HALF:
                result = (scratch[2], 0)
            else:
                result = (out._storage.handle, offset(out))
            negate = getattr(a, "_neg_bit", False) != getattr(b, "_neg_bit", False)
            self._call(name, dev, work, operands, result, batch, dims, negate)
            if code in HALF:
                convert(dev, (out._storage.handle, offset(out)), code, result, FLOAT32,
                        (batch * n * p,), (1,))  # fmt: skip

    @staticmethod
    def _needs_pack(work: int, t, rows: int, cols: int, st: tuple) -> bool:
        return (
            t._dtype.code != work
            or st[0] < 0
            or any(s < 0 for s in st[1:])
            or _layout(t, rows, cols, st) is None
        )

    def _call(self, name, dev, work, operands, result, batch, dims, negate):
        n, k, p = dims
        blas = self.blas
        prefix = PREFIX[work]
        (ab, ao, at, ald, abs_), (bb, bo, bt, bld, bbs) = operands
        alpha, beta = (-1.0 if negate else 1.0), 0.0
        if work in COMPLEX:
            alpha, beta = (alpha, 0.0), (0.0, 0.0)  # cl_float2 / cl_double2 from (re, im)
        head = (clblast.ROW_MAJOR, at, bt, n, p, k, alpha)
        a_part, b_part = (blas.mem(ab), ao, ald), (blas.mem(bb), bo, bld)
        c_part = (blas.mem(result[0]), result[1], p)
        tail = (blas.queue(dev), blas.ffi.NULL)
        if batch == 1:
            call = getattr(blas.lib, f"CLBlast{prefix}gemm")
            status = call(*head, *a_part, *b_part, beta, *c_part, *tail)
        else:
            call = getattr(blas.lib, f"CLBlast{prefix}gemmStridedBatched")
            status = call(
                *head, *a_part, abs_, *b_part, bbs, beta, *c_part, n * p, batch, *tail
            )  # fmt: skip
        if status in clblast.NO_MEMORY:
            raise MemoryError(f"{name}: CLBlast ran out of device memory (status {status})")
        if status != clblast.SUCCESS:
            raise RuntimeError(
                f"{name}: CLBlast failed with status {status} ({DTYPE_NAMES[work]}, batch {batch}, "
                f"{n}x{k} @ {k}x{p})"
            )


def _pack(dev, buffer, work: int, t, shape: tuple, st: tuple) -> None:
    """Copy operand ``t`` (``shape`` = copies, rows, cols; element strides ``st``) into
    ``buffer``, row-major in dtype ``work``. Complex values move as 8-byte words (no OpenCL
    kernel has complex arithmetic, and a copy needs none)."""
    code = t._dtype.code
    if code not in COMPLEX:
        convert(dev, (buffer, 0), work, (t._storage.handle, offset(t)), code, shape, st)
        return
    words = t._dtype.itemsize // 8
    convert(dev, (buffer, 0), INT64, (t._storage.handle, offset(t) * words), INT64,
            (*shape, words), (*(s * words for s in st), 1))  # fmt: skip


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

    def complex_mm(out, a, b):
        mm(out, a, b)

    def complex_bmm(out, a, b):
        bmm(out, a, b)

    mm.__qualname__, bmm.__qualname__ = "xpu.mm", "xpu.bmm"
    complex_mm.__qualname__, complex_bmm.__qualname__ = "xpu.complex_mm", "xpu.complex_bmm"
    complex_mm.reads_bits = complex_bmm.reads_bits = takes_bits
    numeric = DTYPE_NAMES[1:]
    table = {"mm": dict.fromkeys(numeric, mm), "bmm": dict.fromkeys(numeric, bmm)}
    if gemm.blas is not None:  # the built-in kernel has no complex arithmetic
        for name in ("complex64", "complex128"):
            table["mm"][name], table["bmm"][name] = complex_mm, complex_bmm
    return table
