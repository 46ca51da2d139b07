"""Runner of addmm (``beta * input + alpha * mat1 @ mat2``), the op ``F.linear`` with a bias is
on 2-D (and folded N-d) inputs, as in ATen: one kernel call where the backend has one (the
CPU's: the bias copied into the result, then one gemm with beta 1), for the call linear makes,
beta and alpha 1, the bias a row broadcast to every row of the product or a full matrix, one
float dtype and device. Every other call, and the transforms and ember.compile's traces
(``fused``), run the decomposition (mm, then the scaled add).
"""

from __future__ import annotations

from ember._tensor import Tensor, empty

from ._common import check_dtypes


def _fits(c, a, b) -> bool:
    if not (isinstance(c, Tensor) and isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False
    sa, sb, sc = a._shape, b._shape, c._shape
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        return False
    device = a._storage.device
    if b._storage.device is not device or c._storage.device is not device:
        return False
    if a._dtype is not b._dtype or c._dtype is not a._dtype:
        return False
    rows, cols = sa[0], sb[1]
    return c._contig and sc in ((cols,), (1, cols), (rows, cols))


def addmm(op, c, a, b, beta=1, alpha=1):
    """``kernel(out, bias, mat1, mat2)``: out fresh (n, p), bias contiguous."""
    if beta == 1 and alpha == 1 and _fits(c, a, b):
        kernel = op.kernel(a._storage.device.type, a._dtype)
        if kernel is not None:
            out = empty((a._shape[0], b._shape[1]), a._dtype, a._storage.device)
            try:
                kernel(out, c, a, b)
                return out
            except NotImplementedError:  # no BLAS loaded: the decomposition's product
                pass
    args = (c, a, b, beta, alpha)
    check_dtypes(op, args)  # as a composite without a runner
    return op.decomposition(*args)


addmm.fused = True
