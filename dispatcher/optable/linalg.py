"""Matrix products: mm and bmm are the primitives; everything else decomposes into them."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds import addmm as run_addmm
from ..kinds import linalg as run
from ..opdef import DTYPES_ALL, DTYPES_NUMERIC, OUT_ELEMENTWISE, Kind, OpDef, Out, Promotion
from . import einsum

# addmm/baddbmm round three times in float16 (the product, alpha * it, the sum with beta * c)
# where the reference rounds once: 1e-3 fails about one draw in fifty.
_ADD_PRODUCT_TOLERANCES = {dt.float16: (3e-3, 3e-3)}

MM_ARGS = "(out, a, b): out contiguous [n, p] (mm) or [B, n, p] (bmm); a, b any strides"


def _matmul(a, b):
    ra = len(a._shape)  # not .ndim: every eager a @ b comes here, a property costs a frame
    rb = len(b._shape)
    if ra == 2 and rb == 2:
        return ember.mm(a, b)
    if ra == 0 or rb == 0:
        raise RuntimeError(
            f"matmul(): both arguments need at least 1 dimension, got {ra}D and {rb}D"
        )
    if ra == 1 and rb == 1:
        return _dot(a, b)
    if a.ndim == 1:  # PyTorch squeezes a matrix product's dim 0, a batched one's -2
        return _matmul(a.unsqueeze(0), b).squeeze(0 if rb == 2 else -2)
    if b.ndim == 1:
        return _matmul(a, b.unsqueeze(-1)).squeeze(-1)
    if b.ndim == 2:  # (..., n, k) @ (k, p): one big mm over the folded batch
        folded = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
        return ember.mm(folded, b).view(*a.shape[:-1], b.shape[-1])
    if ra == rb and ra > 3 and a._shape[:-2] == b._shape[:-2]:  # no broadcast: no expands
        batch = a._shape[:-2]
        count = math.prod(batch)
        a3 = a.reshape(count, *a._shape[-2:])
        b3 = b.reshape(count, *b._shape[-2:])
        return ember.bmm(a3, b3).view(*batch, a._shape[-2], b._shape[-1])
    # 3-D operands too take the expands: PyTorch's graph has their views (ViewBackward0)
    # Folded sizes spelled out: -1 cannot be inferred next to a zero-size dim.
    batch = ember.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a3 = a.expand(*batch, *a.shape[-2:]).reshape(math.prod(batch), *a.shape[-2:])
    b3 = b.expand(*batch, *b.shape[-2:]).reshape(math.prod(batch), *b.shape[-2:])
    return ember.bmm(a3, b3).view(*batch, a.shape[-2], b.shape[-1])


def _dot(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"dot(): 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"dot(): inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
            f"[{b.shape[0]}] to have the same number of elements, but got {a.shape[0]} and "
            f"{b.shape[0]} elements respectively"
        )
    if a._conj_bit and b._conj_bit:  # PyTorch's: a conjugate view of the plain operands' dot
        return _dot(a.conj(), b.conj()).conj()
    return ember.mm(a.unsqueeze(0), b.unsqueeze(1)).reshape(())


def _mv(a, v):
    return ember.mm(a, v.unsqueeze(1)).squeeze(1)


def _outer(a, b):
    """PyTorch's: the first vector as a column times the second (its graph: MulBackward0 over
    ViewBackward0 and the second)."""
    for name, v in (("self", a), ("vec2", b)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return a.reshape(a.shape[0], 1) * b


# A 16-bit float's product and sum are rounded once, as PyTorch's GEMM does (it accumulates in
# float32 and adds beta * input before storing): the product stays float32 until the end.
_ROUNDED_ONCE = (dt.float16, dt.bfloat16)


def _widened(c, a, b):
    if c.dtype in _ROUNDED_ONCE and a.dtype == b.dtype == c.dtype:
        return c.float(), a.float(), b.float(), c.dtype
    return c, a, b, None


def _addmm(c, a, b, beta=1, alpha=1):
    c, a, b, narrow = _widened(c, a, b)
    product = ember.mm(a, b)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        result = product + ember.zeros_like(c) if c.shape != product.shape else product
    else:
        result = product + (c if beta == 1 else c * beta)
    return result if narrow is None else result.to(narrow)


def _baddbmm(c, a, b, beta=1, alpha=1):
    c, a, b, narrow = _widened(c, a, b)
    product = ember.bmm(a, b)
    if not (product.dtype.is_floating_point or product.dtype.is_complex):  # integers: PyTorch
        # reads the scalars in the integer dtype
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product = product * alpha
    result = product if beta == 0 else product + (c if beta == 1 else c * beta)
    return result if narrow is None else result.to(narrow)


def _trace(x):
    return x.diagonal().sum()


def _diag(x, diagonal=0):
    if x.ndim == 1:
        n = x.shape[0] + abs(diagonal)
        out = ember.zeros(n, n, dtype=x.dtype, device=x.device)
        out.diagonal(diagonal).copy_(x)
        return out
    if x.ndim == 2:
        return x.diagonal(diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")


def _np_einsum(equation, tensors):
    # Integers in int64: a sum over one operand is int64 in ember (as sum() is), and products
    # wrap the same way modulo the narrower dtype the result is then cast to.
    return np.einsum(
        equation, *(t.astype(np.int64) if t.dtype.kind in "biu" else t for t in tensors)
    )


ROWS = [
    OpDef(
        "mm(Tensor input, Tensor mat2) -> Tensor",
        Kind.MATMUL,
        np.matmul,
        dtypes=DTYPES_NUMERIC,
        runner=run.mm,
        samples="mm",
        kernel_args=MM_ARGS,
    ),
    OpDef(
        "bmm(Tensor input, Tensor mat2) -> Tensor",
        Kind.MATMUL,
        np.matmul,
        dtypes=DTYPES_NUMERIC,
        runner=run.bmm,
        samples="bmm",
        kernel_args=MM_ARGS,
    ),
    OpDef(
        "matmul(Tensor input, Tensor other) -> Tensor",
        Kind.MATMUL,
        np.matmul,
        dtypes=DTYPES_NUMERIC,
        decomposition=_matmul,
        samples="matmul",
    ),
    OpDef(
        "dot(Tensor input, Tensor tensor) -> Tensor",
        Kind.MATMUL,
        np.dot,
        dtypes=DTYPES_NUMERIC,
        decomposition=_dot,
        samples="dot",
    ),
    OpDef(
        "mv(Tensor input, Tensor vec) -> Tensor",
        Kind.MATMUL,
        np.matmul,
        dtypes=DTYPES_NUMERIC,
        decomposition=_mv,
        samples="mv",
    ),
    OpDef(
        "outer(Tensor input, Tensor vec2) -> Tensor",
        Kind.MATMUL,
        np.outer,
        dtypes=DTYPES_ALL,  # bool too: a broadcast mul (logical and)
        decomposition=_outer,
        samples="dot",
        out=OUT_ELEMENTWISE,  # PyTorch's outer is a broadcast mul
    ),
    OpDef(
        "addmm(Tensor input, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        Kind.MATMUL,
        lambda c, a, b, beta=1, alpha=1: beta * c + alpha * (a @ b),
        dtypes=DTYPES_NUMERIC,
        decomposition=_addmm,
        runner=run_addmm.addmm,
        samples="addmm",
        kernel_args="(out, bias, mat1, mat2): beta = alpha = 1, one float dtype, bias contiguous "
        "(p,), (1, p) or (n, p); out fresh (n, p). NotImplementedError: the decomposition runs",
        out=Out("exact", "partial"),  # out may be the input it adds to
        tolerances=_ADD_PRODUCT_TOLERANCES,
    ),
    OpDef(
        "baddbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) "
        "-> Tensor",
        Kind.MATMUL,
        lambda c, a, b, beta=1, alpha=1: beta * c + alpha * (a @ b),
        dtypes=DTYPES_NUMERIC,
        decomposition=_baddbmm,
        samples="baddbmm",
        out=Out("exact", "partial"),  # out may be the input it adds to
        tolerances=_ADD_PRODUCT_TOLERANCES,
    ),
    OpDef(
        "trace(Tensor input) -> Tensor",
        Kind.MATMUL,
        np.trace,
        promotion=Promotion.BOOL_TO_LONG,
        decomposition=_trace,
        samples="matrix",
        out=None,
    ),
    OpDef(
        "diag(Tensor input, int diagonal=0) -> Tensor",
        Kind.MATMUL,
        np.diag,
        decomposition=_diag,
        samples="diag",
    ),
    OpDef(
        "einsum(str equation, Tensor[] tensors) -> Tensor",
        Kind.MATMUL,
        _np_einsum,
        dtypes=DTYPES_NUMERIC,
        decomposition=einsum.einsum,
        frontend=True,
        method=False,
        samples="einsum",
        out=None,
    ),
]
