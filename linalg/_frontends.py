"""The ember.linalg functions whose PyTorch signatures the op rows cannot say alone (deprecated
positional aliases such as ``pinv(A, rcond)``), and the old top-level names that are plain
Python in PyTorch too (``torch.lu``, ``torch.tensordot``)."""

# ruff: noqa: N803, N806 - PyTorch's argument and matrix names (A, LU)
from __future__ import annotations

from ember import return_types as rt
from ember.dispatcher.optable import OPS
from ember.dispatcher.out import copy_recorded


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None):
    """The pseudo-inverse: singular values below ``max(atol, rtol * largest)`` are dropped.

    Args:
        A: tensor of shape ``(*, m, n)``.
        rcond: the old name of ``rtol`` (positional, as in PyTorch).
        hermitian: A is symmetric; uses the eigendecomposition.
        atol, rtol: absolute and relative tolerances (floats or tensors broadcastable to
            ``A.shape[:-2]``); ``rtol`` defaults to ``eps * max(m, n)`` when neither is given.

    Returns:
        Tensor of shape ``(*, n, m)``.
    """
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError("linalg.pinv: rcond and rtol cannot be given together")
        rtol = rcond
    return OPS["linalg_pinv"](A, atol, rtol, hermitian)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values above ``max(atol, rtol * largest)``; ``tol`` is the old
    name of ``atol`` (and then ``rtol`` is 0), as in PyTorch."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given with atol or rtol")
        atol, rtol = tol, 0.0
    return OPS["linalg_matrix_rank"](A, atol, rtol, hermitian)


def ldl_factor(A, *, hermitian=False):
    """The LDL^T factorization (Bunch-Kaufman pivoting); raises for a singular A."""
    LD, pivots, _ = OPS["linalg_ldl_factor_ex"](A, hermitian, True)
    return rt.linalg_ldl_factor(LD, pivots)


# ---- PyTorch's old top-level names that are Python functions there too ---------------------------


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` dims: the last ``dims`` of a with the first of b, or the two lists of
    dims ``([dims of a], [dims of b])``."""
    if hasattr(dims, "ndim") and dims.ndim == 0:
        dims = int(dims)
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    result = OPS["tensordot"](a, b, [int(d) for d in dims_a], [int(d) for d in dims_b])
    return result if out is None else copy_recorded("tensordot", result, out)


def lu(A, pivot=True, get_infos=False, out=None):
    """The old ``torch.lu``: ``(LU, pivots)``, or ``(LU, pivots, infos)`` with ``get_infos``."""
    LU, pivots, infos = OPS["linalg_lu_factor_ex"](A, pivot, not get_infos)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


TOP_LEVEL = {"tensordot": tensordot, "lu": lu}
TENSOR_METHODS = {"lu": lu}
