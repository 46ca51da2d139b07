"""Runners for mm and bmm: shape and dtype checks, then ``kernel(out, a, b)``.

Kernels get inputs with any strides (a BLAS backend makes them BLAS-compatible itself) and a
contiguous output. matmul, dot, addmm, einsum... decompose into these two.
"""

from __future__ import annotations

from ember._tensor import Tensor, empty

from ._common import common_device, unsupported_dtype


def _check(op, a, b, rank: int) -> None:
    for name, t in (("input", a), ("mat2", b)):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{op.name}(): argument '{name}' must be Tensor, not {type(t).__name__}"
            )
        if len(t._shape) != rank:
            raise RuntimeError(f"{op.name}(): {name} must be a {rank}D tensor, got {t.ndim}D")
    if a._dtype is not b._dtype:
        raise RuntimeError(
            f"{op.name}(): expected m1 and m2 to have the same dtype, but got: {a._dtype.name} != "
            f"{b._dtype.name}"
        )
    if a._dtype not in op.dtypes:
        raise unsupported_dtype(op, a._dtype)


def mm(op, a, b):
    # Fast path: 2-D tensors of one dtype and device whose kernel the full path below found
    # (``op.fast``: dtype -> (device, kernel), cleared with the kernel memo on a registry reset).
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        sa = a._shape
        sb = b._shape
        dtype = a._dtype
        dev = a._storage.device
        if (
            len(sa) == 2
            and len(sb) == 2
            and sa[1] == sb[0]
            and dtype is b._dtype
            and dev is b._storage.device
        ):
            entry = op.fast.get(dtype)
            if entry is not None and entry[0] is dev:
                out = empty((sa[0], sb[1]), dtype, dev)
                entry[1](out, a, b)
                return out
    return _mm(op, a, b)


def _mm(op, a, b):
    _check(op, a, b, 2)
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(
            f"mm(): mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x{a._shape[1]} and "
            f"{b._shape[0]}x{b._shape[1]})"
        )
    dev = common_device(op.name, (a, b))
    out = empty((a._shape[0], b._shape[1]), a._dtype, dev)
    kernel = op.kernel(dev.type, a._dtype)
    kernel(out, a, b)
    if dev is a._storage.device and dev is b._storage.device:  # not a 0-dim CPU operand
        op.fast[a._dtype] = (dev, kernel)
    return out


def bmm(op, a, b):
    _check(op, a, b, 3)
    if a._shape[0] != b._shape[0] or a._shape[2] != b._shape[1]:
        raise RuntimeError(
            f"bmm(): batch1 and batch2 shapes cannot be multiplied: {list(a._shape)} and "
            f"{list(b._shape)} (expected [B, n, m] and [B, m, p])"
        )
    dev = common_device(op.name, (a, b))
    out = empty((a._shape[0], a._shape[1], b._shape[2]), a._dtype, dev)
    op.kernel(dev.type, a._dtype)(out, a, b)
    return out
