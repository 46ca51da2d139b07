"""ember.linalg's errors: LinAlgError for singular and non-positive-definite inputs, naming the
batch element; argument checks with PyTorch's messages (compared with torch's own)."""

# ruff: noqa: N803 - records name matrices as PyTorch does (A, B) and the library L
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SINGULAR = np.stack([np.eye(3), np.zeros((3, 3))])  # batch element 1 is singular
NOT_PD = np.stack([np.eye(3), -np.eye(3)])


def _both(fn, arrays, device):
    """The error ember raises and the one torch raises for ``fn(lib, *tensors)``."""
    errors = []
    for lib, make in ((ember, lambda a: ember.tensor(a, device=device)), (torch, torch.tensor)):
        tensors = [make(a) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                fn(lib, *tensors)
            except Exception as exc:  # the exception itself is compared below
                errors.append(exc)
                continue
        errors.append(None)
    return errors


LINALG_ERRORS = [
    ("inv", lambda L, A: L.linalg.inv(A), [SINGULAR]),
    ("inv one", lambda L, A: L.linalg.inv(A), [SINGULAR[1]]),
    ("inverse", lambda L, A: L.inverse(A), [SINGULAR]),
    ("solve", lambda L, A, B: L.linalg.solve(A, B), [SINGULAR, np.ones((2, 3))]),
    ("cholesky", lambda L, A: L.linalg.cholesky(A), [NOT_PD]),
    ("cholesky one", lambda L, A: L.linalg.cholesky(A), [NOT_PD[1]]),
    ("matrix_power", lambda L, A: L.linalg.matrix_power(A, -1), [SINGULAR]),
    ("solve_ex check_errors", lambda L, A, B: L.linalg.solve_ex(A, B, check_errors=True),
     [SINGULAR, np.ones((2, 3))]),
    ("inv_ex check_errors", lambda L, A: L.linalg.inv_ex(A, check_errors=True), [SINGULAR]),
    ("tensorinv", lambda L, A: L.linalg.tensorinv(A, ind=1), [SINGULAR[1]]),
    ("cholesky_inverse", lambda L, A: L.cholesky_inverse(A), [SINGULAR]),
    ("cholesky_inverse one", lambda L, A: L.cholesky_inverse(A, upper=True), [SINGULAR[1]]),
    ("svd non-finite", lambda L, A: L.linalg.svd(A), [np.stack([np.eye(3), np.full((3, 3),
                                                                                     np.nan)])]),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,arrays", LINALG_ERRORS, ids=[c[0] for c in LINALG_ERRORS])
def test_linalg_error_names_the_batch_element(name, fn, arrays, device):
    ours, theirs = _both(fn, arrays, device)
    assert isinstance(ours, ember.linalg.LinAlgError), f"{name}: {ours!r}"
    assert isinstance(ours, RuntimeError)  # as torch.linalg.LinAlgError is
    assert str(ours) == str(theirs)
    batched = np.asarray(arrays[0]).ndim > 2
    assert ("(Batch element 1)" in str(ours)) == batched


def test_ex_variants_return_info_instead(device):
    A = ember.tensor(SINGULAR, device=device)
    _, info = ember.linalg.inv_ex(A)
    assert info.dtype is ember.int32 and info.tolist() == [0, 1]
    _, info = ember.linalg.cholesky_ex(ember.tensor(NOT_PD, device=device))
    assert info.tolist() == [0, 1]
    with pytest.raises(ember.linalg.LinAlgError, match=re.escape("(Batch element 1)")):
        ember.linalg.cholesky_ex(ember.tensor(NOT_PD, device=device), check_errors=True)
    assert ember.linalg.lu_factor_ex(A).info.tolist() == [0, 1]
    assert ember.linalg.det(A).tolist() == [1.0, 0.0]


def test_lu_factor_raises_runtime_error_as_torch():
    ours, theirs = _both(lambda L, A: L.linalg.lu_factor(A), [SINGULAR], "cpu")
    assert type(ours) is RuntimeError and str(ours) == str(theirs)


ARGUMENT_ERRORS = [
    ("inv int", lambda L, A: L.linalg.inv(A), [np.ones((3, 3), np.int64)]),
    ("inv half", lambda L, A: L.linalg.inv(A.half()), [np.eye(3)]),
    ("inv rectangular", lambda L, A: L.linalg.inv(A), [np.ones((3, 4))]),
    ("inv vector", lambda L, A: L.linalg.inv(A), [np.ones(3)]),
    ("det rectangular", lambda L, A: L.linalg.det(A), [np.ones((3, 4))]),
    ("slogdet int", lambda L, A: L.linalg.slogdet(A), [np.ones((3, 3), np.int64)]),
    ("cholesky rectangular", lambda L, A: L.linalg.cholesky(A), [np.ones((3, 4))]),
    ("eigh rectangular", lambda L, A: L.linalg.eigh(A), [np.ones((3, 4))]),
    ("qr vector", lambda L, A: L.linalg.qr(A), [np.ones(3)]),
    ("svd int", lambda L, A: L.linalg.svd(A), [np.ones((3, 3), np.int64)]),
    ("solve shapes", lambda L, A, B: L.linalg.solve(A, B), [np.eye(3), np.ones(4)]),
    ("solve batch shapes", lambda L, A, B: L.linalg.solve(A, B), [np.eye(3), np.ones((2, 4, 3))]),
    ("solve_triangular shapes", lambda L, A, B: L.linalg.solve_triangular(A, B, upper=True),
     [np.eye(3), np.ones((4, 2))]),
    ("lstsq rows", lambda L, A, B: L.linalg.lstsq(A, B), [np.ones((3, 3)), np.ones((4, 2))]),
    ("householder shapes", lambda L, A, t: L.linalg.householder_product(A, t),
     [np.ones((3, 2)), np.ones(3)]),
    ("householder wide", lambda L, A, t: L.linalg.householder_product(A, t),
     [np.ones((3, 4)), np.ones(3)]),
    ("matrix_norm order", lambda L, A: L.linalg.matrix_norm(A, 3), [np.ones((3, 3))]),
    ("matrix_norm vector", lambda L, A: L.linalg.matrix_norm(A), [np.ones(3)]),
    ("norm 3d", lambda L, A: L.linalg.norm(A, 2), [np.ones((2, 2, 2))]),
    ("vector_norm int", lambda L, A: L.linalg.vector_norm(A), [np.ones(3, np.int64)]),
    ("cross length", lambda L, a, b: L.linalg.cross(a, b), [np.ones((3, 4)), np.ones((3, 4))]),
    ("cross dims", lambda L, a, b: L.linalg.cross(a, b, dim=0),
     [np.ones((2, 3, 3)), np.ones((3, 3))]),
    ("multi_dot one", lambda L, a: L.linalg.multi_dot([a]), [np.ones(3)]),
    ("multi_dot last", lambda L, a, b: L.linalg.multi_dot([a, b]),
     [np.ones(3), np.ones((3, 3, 3))]),
    ("multi_dot shapes", lambda L, a, b: L.linalg.multi_dot([a, b]),
     [np.ones((3, 2)), np.ones((3, 3))]),
    ("matrix_exp rectangular", lambda L, A: L.linalg.matrix_exp(A), [np.ones((3, 4))]),
    ("matrix_power vector", lambda L, A: L.linalg.matrix_power(A, 2), [np.ones(3)]),
    ("tensorinv", lambda L, A: L.linalg.tensorinv(A, ind=1), [np.ones((4, 3))]),
    ("vander N", lambda L, x: L.linalg.vander(x, N=1), [np.ones(3)]),
    ("vecdot int", lambda L, x, y: L.linalg.vecdot(x, y), [np.ones(2, np.int64)] * 2),
    ("pinv int", lambda L, A: L.linalg.pinv(A), [np.ones((3, 3), np.int64)]),
    ("pinv vector", lambda L, A: L.linalg.pinv(A), [np.ones(3)]),
    ("logdet int", lambda L, A: L.logdet(A), [np.ones((3, 3), np.int64)]),
    ("cholesky_inverse rectangular", lambda L, A: L.cholesky_inverse(A), [np.ones((3, 4))]),
    ("lu vector", lambda L, A: L.linalg.lu(A), [np.ones(3)]),
    ("cond vector", lambda L, A: L.linalg.cond(A), [np.ones(3)]),
    ("lstsq driver", lambda L, A, B: L.linalg.lstsq(A, B, driver="magic"),
     [np.eye(3), np.ones((3, 1))]),
]  # fmt: skip


@pytest.mark.parametrize("name,fn,arrays", ARGUMENT_ERRORS, ids=[c[0] for c in ARGUMENT_ERRORS])
def test_argument_errors_are_pytorchs(name, fn, arrays):
    ours, theirs = _both(fn, arrays, "cpu")
    assert ours is not None and theirs is not None, f"{name}: {ours!r} / {theirs!r}"
    assert isinstance(ours, (type(theirs), RuntimeError)), name
    assert str(ours) == str(theirs)


EIG_ERRORS = {
    "not square": np.ones((2, 3)),
    "a vector": np.ones(3),
    "NaN": np.array([[math.nan, 1.0], [1.0, 1.0]]),
}


# torch 2.13's eigvals of a NaN matrix crashes in MKL's sgebal: no oracle for that one
EIG_CASES = [(fn, case) for fn in ("eig", "eigvals") for case in EIG_ERRORS]
EIG_CASES.remove(("eigvals", "NaN"))


@pytest.mark.parametrize("fn,case", EIG_CASES)
def test_eig_errors_are_pytorchs(fn, case):
    ours, theirs = _both(lambda L, A: getattr(L.linalg, fn)(A), [EIG_ERRORS[case]], "cpu")
    assert type(ours) is type(theirs) and str(ours) == str(theirs), f"{ours!r} / {theirs!r}"


def test_singular_values_of_non_finite_input():
    A = ember.full((3, 3), math.nan)
    ours, theirs = _both(lambda L, A: L.linalg.svd(A), [A.numpy()], "cpu")
    assert isinstance(ours, ember.linalg.LinAlgError) and str(ours) == str(theirs)
