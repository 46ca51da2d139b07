"""Glue for mm and bmm: cuBLAS for floating dtypes, the ``linalg`` kernel for integers (and for
everything when cuBLAS did not load).

Kernel convention: ``kernel(out, a, b)``, ``out`` contiguous ``[n, p]`` (mm) or ``[B, n, p]``
(bmm), ``a`` and ``b`` with any strides. cuBLAS is column-major, so the row-major product
``out = a @ b`` is computed as ``out^T = b^T a^T``: cuBLAS's A is ``b`` and its B is ``a``.
An operand whose strides no BLAS layout describes (broadcast rows, negative strides) is copied to
contiguous scratch first.
"""

from __future__ import annotations

import math
import warnings

from .. import launch
from ..launch import OP_N, OP_T
from ._args import DTYPE_NAMES, TOKENS, addr, run_strided

BLAS_DTYPES = ("float16", "bfloat16", "float32", "float64")
MAX_GRID_Z = 65535


def _contiguous(rt, dev, t, shape, strides, target: int) -> tuple:
    """Copy a (batch, rows, cols) operand to ``target``; its contiguous element strides."""
    size = t._dtype.itemsize
    dense = (shape[1] * shape[2], shape[2], 1)
    token = TOKENS[t._dtype.code]
    run_strided(
        rt,
        dev,
        f"em_copy_{token}_{token}",
        shape,
        [
            (target, tuple(s * size for s in dense), 0),
            (addr(t), tuple(s * size for s in strides), 0),
        ],
    )
    return dense


def _layouts(n, k, p, sa, sb):
    """cuBLAS layouts of a (n x k) and b (k x p), or None where a copy is needed."""
    la = launch.blas_layout(n, k, sa[1], sa[2])
    lb = launch.blas_layout(k, p, sb[1], sb[2])
    return la if sa[0] >= 0 else None, lb if sb[0] >= 0 else None


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
        if blas is None or dtype not in BLAS_DTYPES:
            return _kernel(dev, out, a, b, batch, n, k, p, sa, sb)
        la, lb = _layouts(n, k, p, sa, sb)
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
        ta, lda = (OP_N if lb[0] == "rows" else OP_T), lb[1]
        tb, ldb = (OP_N if la[0] == "rows" else OP_T), la[1]
        blas.gemm(
            dev, dtype, ta, tb, p, n, k, pb, lda, sb[0], pa, ldb, sa[0], addr(out), p, n * p, batch
        )

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

    numeric = DTYPE_NAMES[1:]
    return {"mm": dict.fromkeys(numeric, mm), "bmm": dict.fromkeys(numeric, bmm)}
