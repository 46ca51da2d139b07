"""Eigendecompositions of general (non-symmetric) matrices: ``ember.linalg.eig`` and
``eigvals``, complex results for real or complex inputs.

``_linalg_eig`` is the primitive (LAPACK's geev on the CPU, ``dispatcher/lapack_geev.py``; other
devices reach it through the declared CPU fallback); its gradient is PyTorch's
linalg_eig_backward (``autograd/eig_formula.py``). ``eigvals`` asks for the eigenvectors only when
a gradient will need them, as PyTorch's does.
"""

# ruff: noqa: N803 - matrices keep their mathematical names (A, L, V), as in PyTorch
from __future__ import annotations

import dataclasses

import numpy as np

import ember
from ember import _dtype as dt
from ember import return_types as rt
from ember._tensor import empty

from ..kinds._common import OPS
from ..kinds.lapack import no_convergence
from ..kinds.matrices import DTYPES, as_batch, batch_size, check_matrix, display, raise_info
from ..opdef import Kind, OpDef, Out
from .lapack import TOLERANCES as REAL_TOLERANCES
from .linalg_rows import composite

_DTYPES = frozenset(DTYPES) | frozenset(dt.COMPLEX_TYPES)
_OUT = Out("cast", None)
# results are complex: the real inputs' tolerances, by the result's dtype
TOLERANCES = {**REAL_TOLERANCES, dt.complex64: REAL_TOLERANCES[dt.float32]}


def _run_eig(op, A, compute_v=True):
    """``kernel(w, v, a, compute_v) -> info per matrix``: geev of each matrix of A."""
    name = display(op)
    check_matrix(name, A, square=True)
    *batch, n, _ = A._shape
    batch, dev = tuple(batch), A._storage.device
    result = A._dtype if A._dtype.is_complex else A._dtype.to_complex()
    count = batch_size(batch)
    w = empty((count, n), result, dev)
    v = empty((count, n, n) if compute_v else (0,), result, dev)
    a = A.contiguous().reshape((count, n, n))
    info = op.kernel(dev.type, A._dtype)(w, v, a, bool(compute_v))
    raise_info(info, name, no_convergence("eigenvalues"), bool(batch))
    values = as_batch(w, batch, (n,))
    return values, (v.reshape((*batch, n, n)) if compute_v else v)


def _check(name: str, A) -> None:
    """PyTorch's checks and messages, under the public name; an integer A is refused naming the
    op (PyTorch's "Unknown Complex ScalarType for Long" names none)."""
    check_matrix(name, A, square=True)


def _eig(A):
    _check("linalg.eig", A)
    parts = ember.view_as_real(A.resolve_conj()) if A.dtype.is_complex else A
    finite = A.device.type == "meta" or bool(OPS["isfinite"](parts).all())
    if not finite:  # eig checks; eigvals does not (PyTorch's); a meta A has no values
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    return rt.linalg_eig(*OPS["_linalg_eig"](A, True))


def _eigvals(A):
    _check("linalg.eigvals", A)
    wants_grad = A.requires_grad and ember.is_grad_enabled()
    return OPS["_linalg_eig"](A, wants_grad)[0]


def _np_eig(A, compute_v=True):
    w, v = np.linalg.eig(A)
    return (w, v) if compute_v else (w, np.empty((0,), w.dtype))


def _with_out(row: OpDef) -> OpDef:
    """PyTorch's eig/eigvals out=: any dtype the complex result casts to."""
    return dataclasses.replace(row, out=_OUT)


ROWS = [
    OpDef(
        "_linalg_eig(Tensor A, bool compute_v=True) -> (Tensor eigenvalues, Tensor eigenvectors)",
        Kind.LINALG,
        _np_eig,
        dtypes=_DTYPES,
        runner=_run_eig,
        function=False,
        method=False,
        kernel_args="(w complex[B, n], v complex[B, n, n], a[B, n, n], compute_v) -> host info: "
        "geev; a row-major and read only",
        samples="eig",
        tolerances=TOLERANCES,
        attrs={"display": "linalg.eig"},
        out=None,
    ),
    _with_out(
        composite(
            "linalg_eig(Tensor input) -> (Tensor eigenvalues, Tensor eigenvectors)",
            _eig,
            lambda A: tuple(np.linalg.eig(A)),
            "eig",
            dtypes=_DTYPES,
            display="linalg.eig",
            tolerances=TOLERANCES,
        )
    ),
    _with_out(
        composite(
            "linalg_eigvals(Tensor input) -> Tensor",
            _eigvals,
            np.linalg.eigvals,
            "eig",
            dtypes=_DTYPES,
            display="linalg.eigvals",
            tolerances=TOLERANCES,
        )
    ),
]
