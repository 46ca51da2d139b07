"""Glue for mm and bmm: cuBLAS for floating dtypes, the ``linalg`` kernel for integers (and for
everything when cuBLAS did not load).

Kernel convention: ``kernel(out, a, b)``, ``out`` contiguous ``[n, p]`` (mm) or ``[B, n, p]``
(bmm), ``a`` and ``b`` with any strides. cuBLAS is column-major, so the row-major product
``out = a @ b`` is computed as ``out^T = b^T a^T``: cuBLAS's A is ``b`` and its B is ``a``.
An operand whose strides no BLAS layout describes (broadcast rows, negative strides) is copied to
contiguous scratch first.

complex64/complex128 run on a BLAS that has them (``blas.COMPLEX``: cuBLAS and the emulator),
and read lazy conjugate and negative bits (dispatcher/mathbits.py, ``reads_bits``): a
conjugate view whose memory is column-major (``x.mH``, ``x.conj().T``) is CUBLAS_OP_C of that
memory, a negative bit negates alpha. cuBLAS has no conjugate without a transpose, so the
math-bits layer materializes the other conjugate views (``takes_bits``).
"""

from __future__ import annotations

import math
import warnings

from .. import launch
from ..launch import OP_C, OP_N, OP_T
from ._args import DTYPE_NAMES, TOKENS, addr, run_strided

BLAS_DTYPES = ("float16", "bfloat16", "float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
MAX_GRID_Z = 65535


def _contiguous(rt, dev, t, shape, strides, target: int) -> tuple:
    """Copy a (batch, rows, cols) operand to ``target``; its contiguous element strides. Complex
    values move as 8-byte words (a copy needs no complex arithmetic)."""
    size = t._dtype.itemsize
    dense = (shape[1] * shape[2], shape[2], 1)
    token = TOKENS[t._dtype.code] if t._dtype.name not in COMPLEX_DTYPES else "i64"
    words = (size // 8,) if token == "i64" and size > 8 else ()
    run_strided(
        rt,
        dev,
        f"em_copy_{token}_{token}",
        (*shape, *words),
        [
            (target, (*(s * size for s in dense), *(8 for _ in words)), 0),
            (addr(t), (*(s * size for s in strides), *(8 for _ in words)), 0),
        ],
    )
    return dense


def conj_layout(rows: int, cols: int, s0: int, s1: int):
    """``("cols", ld)`` for a column-major rows x cols matrix (a conjugate view cuBLAS reads as
    OP_C of its memory), or None."""
    if (rows == 1 or s0 == 1) and (cols == 1 or s1 >= rows):
        return "cols", max(1, rows if cols == 1 else s1)
    return None


def takes_bits(t) -> bool:
    """Whether the complex kernel reads this flagged operand as it is (see the module doc)."""
    rows, cols = t._shape[-2:]
    return not t._conj_bit or conj_layout(rows, cols, *t._stride[-2:]) is not None


def _layout(t, rows, cols, st):
    if getattr(t, "_conj_bit", False):
        return conj_layout(rows, cols, st[1], st[2])
    return launch.blas_layout(rows, cols, st[1], st[2])


def _layouts(a, b, n, k, p, sa, sb):
    """cuBLAS layouts of a (n x k) and b (k x p), or None where a copy is needed."""
    la, lb = _layout(a, n, k, sa), _layout(b, k, p, sb)
    return la if sa[0] >= 0 else None, lb if sb[0] >= 0 else None


def _op(layout, t) -> int:
    """cuBLAS's op of an operand whose memory reads as ``layout`` (column-major)."""
    if layout[0] == "rows":
        return OP_N
    return OP_C if getattr(t, "_conj_bit", False) else OP_T


def build(rt) -> dict:
    try:
        blas = rt.make_blas()
    except (OSError, ImportError) as error:
        warnings.warn(
            f"ember {rt.device_type} backend: {error}; floating-point matrix products use "
            "ember's own (slower) kernel",
            RuntimeWarning,
            stacklevel=2,
        )
        blas = None
    blas_dtypes = BLAS_DTYPES + (COMPLEX_DTYPES if getattr(blas, "COMPLEX", False) else ())

    def product(out, a, b, batch, sa, sb):
        dev = out._storage.device.index or 0
        n, k = a._shape[-2:]
        p = b._shape[-1]
        if batch * n * p == 0:
            return
        if k == 0:
            rt.memset(dev, addr(out), batch * n * p * out._dtype.itemsize)
            return
        dtype = a._dtype.name
        if blas is None or dtype not in blas_dtypes:
            return _kernel(dev, out, a, b, batch, n, k, p, sa, sb)
        la, lb = _layouts(a, b, n, k, p, sa, sb)
        pa, pb = addr(a), addr(b)
        if la is None or lb is None:
            size = a._dtype.itemsize
            need_a = 0 if la is not None else batch * n * k * size
            need_b = 0 if lb is not None else batch * k * p * size
            base = rt.scratch(dev, need_a + need_b + 512)
            if la is None:
                sa, pa = _contiguous(rt, dev, a, (batch, n, k), sa, base), base
                la = launch.blas_layout(n, k, sa[1], sa[2])
            if lb is None:
                target = base + -(-need_a // 256) * 256
                sb, pb = _contiguous(rt, dev, b, (batch, k, p), sb, target), target
                lb = launch.blas_layout(k, p, sb[1], sb[2])
        ta, lda = _op(lb, b), lb[1]
        tb, ldb = _op(la, a), la[1]
        args = (dev, dtype, ta, tb, p, n, k, pb, lda, sb[0], pa, ldb, sa[0], addr(out), p, n * p)
        if a._neg_bit != b._neg_bit:  # only complex kernels get flagged operands
            return blas.gemm(*args, batch, negate=True)
        blas.gemm(*args, batch)

    def _kernel(dev, out, a, b, batch, n, k, p, sa, sb):
        size = a._dtype.itemsize
        args = (batch, n, k, p, *(s * size for s in sa), *(s * size for s in sb))
        grid = (math.ceil(p / 16), math.ceil(n / 16), min(batch, MAX_GRID_Z))
        rt.launch(
            dev,
            f"em_matmul_{TOKENS[a._dtype.code]}",
            grid,
            (16, 16, 1),
            addr(out),
            addr(a),
            addr(b),
            *args,
        )

    def mm(out, a, b):
        product(out, a, b, 1, (0, *a._stride), (0, *b._stride))

    def bmm(out, a, b):
        product(out, a, b, a._shape[0], a._stride, b._stride)

    def complex_mm(out, a, b):
        mm(out, a, b)

    def complex_bmm(out, a, b):
        bmm(out, a, b)

    complex_mm.reads_bits = complex_bmm.reads_bits = takes_bits
    numeric = DTYPE_NAMES[1:]
    table = {"mm": dict.fromkeys(numeric, mm), "bmm": dict.fromkeys(numeric, bmm)}
    for name in blas_dtypes[len(BLAS_DTYPES) :]:
        table["mm"][name], table["bmm"][name] = complex_mm, complex_bmm
    return table
