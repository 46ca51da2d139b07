"""linalg.matrix_exp takes PyTorch's degrees and scalings, so its results are PyTorch's up to
the matmuls' rounding: lone matrices at 1-norms on both sides of each degree's bound, batches
(where PyTorch takes degree 18 for every matrix), complex, non-finite entries. A Pade method,
or one degree for a whole batch, is more accurate than PyTorch's degree 8 near its bound (an
error of 1e-12 at norm 0.04 in float64) and fails the float64 bound here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

# PyTorch's float64 degree bounds (1, 2, 4, 8, 12, then degree 18 with squarings)
NORMS = (1e-17, 1e-9, 1e-5, 3e-4, 0.01, 0.04, 0.049, 0.06, 0.29, 0.31, 1.0, 1.2, 5.0, 80.0)


def _with_norm(rng, shape, norm, complex_=False):
    a = rng.standard_normal(shape)
    if complex_:
        a = a + 1j * rng.standard_normal(shape)
    return a * (norm / np.abs(a).sum(-2).max(-1, keepdims=True)[..., None])


def _relative_gap(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("dtype, bound", [("float64", 1e-13), ("complex128", 1e-13),
                                          ("float32", 2e-6)])  # fmt: skip
def test_lone_matrix_is_pytorchs(norm, dtype, bound):
    a = _with_norm(np.random.default_rng(7), (5, 5), norm, dtype.startswith("complex"))
    want = torch.linalg.matrix_exp(torch.tensor(a).to(getattr(torch, dtype))).numpy()
    got = ember.linalg.matrix_exp(ember.tensor(a).to(getattr(ember, dtype))).numpy()
    assert _relative_gap(got, want) <= bound


@pytest.mark.parametrize("batch", [(3,), (2, 2)])
@pytest.mark.parametrize("norms", [(0.01, 0.04, 0.2), (1e-6, 3.0, 60.0)])
def test_batch_takes_degree_18_as_pytorch(batch, norms):
    rng = np.random.default_rng(3)
    a = np.stack([_with_norm(rng, (4, 4), norms[i % 3]) for i in range(int(np.prod(batch)))])
    a = a.reshape(*batch, 4, 4)
    want = torch.linalg.matrix_exp(torch.tensor(a)).numpy()
    got = ember.linalg.matrix_exp(ember.tensor(a)).numpy()
    for g, w in zip(got.reshape(-1, 4, 4), want.reshape(-1, 4, 4)):
        assert _relative_gap(g, w) <= 1e-13


def test_non_finite_entries_do_not_hang_or_scale():
    a = np.eye(3) * 0.5
    for bad in (np.nan, np.inf):
        b = a.copy()
        b[0, 1] = bad
        got = ember.linalg.matrix_exp(ember.tensor(b)).numpy()
        assert not np.isfinite(got).all()
