"""The ember.linalg functions whose PyTorch signatures the op rows cannot say alone (deprecated
positional aliases such as ``pinv(A, rcond)``), and the old top-level names that are plain
Python in PyTorch too (``torch.lu``, ``torch.tensordot``)."""

# ruff: noqa: N803, N806 - PyTorch's argument and matrix names (A, LU)
from __future__ import annotations

import ember
from ember import return_types as rt
from ember.dispatcher.optable import OPS
from ember.dispatcher.out import call_op, copy_recorded


def _row(name: str, args: tuple, out):
    """The row ``name`` over ``args``, with out= checked and written as the row's rule says."""
    op = OPS[name]
    return op(*args) if out is None else call_op(op, out, args, None)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
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
    return _row("linalg_pinv", (A, atol, rtol, hermitian), out)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The number of singular values above ``max(atol, rtol * largest)``; ``tol`` is the old
    name of ``atol`` (and then ``rtol`` is 0), as in PyTorch."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given with atol or rtol")
        atol, rtol = tol, 0.0
    return _row("linalg_matrix_rank", (A, atol, rtol, hermitian), out)


def ldl_factor(A, *, hermitian=False, out=None):
    """The LDL^T factorization (Bunch-Kaufman pivoting); raises for a singular A."""
    if out is None:
        LD, pivots, _ = OPS["linalg_ldl_factor_ex"](A, hermitian, True)
        return rt.linalg_ldl_factor(LD, pivots)
    # ldl_factor_ex's out= rule (exact dtypes) with a scratch info, as PyTorch's out variant.
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError("linalg_ldl_factor(): argument 'out' must be a tuple of 2 Tensors")
    info = A.new_empty(0, dtype=ember.int32)
    LD, pivots, _ = _row("linalg_ldl_factor_ex", (A, hermitian, True), (*out, info))
    return rt.linalg_ldl_factor(LD, pivots)


def lstsq(input, b, rcond=None, *, driver=None, out=None):
    """The least-squares solution of ``input @ X = b`` through LAPACK's ``driver``.

    Args:
        input: tensor of shape ``(*, m, n)``.
        b: tensor of shape ``(*, m, k)``.
        rcond: singular values below ``rcond * largest`` count as zero (gelsy/gelsd/gelss).
        driver: ``"gels"`` (the default), ``"gelsy"``, ``"gelsd"`` or ``"gelss"``.

    Returns:
        ``(solution, residuals, rank, singular_values)``; only the first two are
        differentiable, as in PyTorch.
    """
    args = (input, b, rcond, driver)
    if out is not None:
        return call_op(OPS["linalg_lstsq"], out, args, None)
    solution, residuals, rank, singular_values = OPS["linalg_lstsq"](*args)
    # PyTorch's derivatives.yaml marks rank and singular_values not differentiable.
    return rt.linalg_lstsq(solution, residuals, rank, singular_values.detach())


def _complex_needed(name: str):
    def fn(A):
        raise NotImplementedError(
            f"linalg.{name}: the eigenvalues of a general real matrix are complex, and ember has "
            "no complex dtypes yet; use linalg.eigh/eigvalsh for symmetric matrices"
        )

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "ember.linalg"
    return fn


eig = _complex_needed("eig")
eigvals = _complex_needed("eigvals")


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
    result = OPS["linalg_lu_factor_ex"](A, pivot, not get_infos)
    if out is None:
        return tuple(result) if get_infos else tuple(result[:2])
    # PyTorch's Python lu: a size check, then each out resized and copied into (a cast).
    if len(out) - int(get_infos) != 2:
        raise TypeError(f"expected tuple of {2 + int(get_infos)} elements but got {len(out)}")
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    for target, value in zip(out, result):
        target.resize_as_(value).copy_(value)
    return out


TOP_LEVEL = {"tensordot": tensordot, "lu": lu}
TENSOR_METHODS = {"lu": lu}
