"""svd_lowrank and pca_lowrank (ember/_lowrank.py) against torch: their random projections
differ, so what is compared is what does not depend on them when q covers the rank: singular
values, the reconstruction, orthonormal factors, the gradient of the singular values, and
PyTorch's refusals."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _low_rank(rng, shape, rank: int) -> np.ndarray:
    *batch, m, n = shape
    left = rng.standard_normal((*batch, m, rank))
    right = rng.standard_normal((*batch, rank, n))
    return left @ right


def _np(t) -> np.ndarray:
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("shape", [(12, 7), (6, 11), (2, 9, 8)])
def test_svd_lowrank_recovers_a_low_rank_matrix(shape):
    a = _low_rank(np.random.default_rng(0), shape, 3)
    ember.manual_seed(0)
    U, S, V = ember.svd_lowrank(ember.tensor(a), q=4)
    want = torch.linalg.svdvals(torch.tensor(a))[..., :3].numpy()
    assert tuple(U.shape) == (*shape[:-1], 4) and tuple(V.shape) == (*shape[:-2], shape[-1], 4)
    np.testing.assert_allclose(_np(S)[..., :3], want, rtol=1e-9, atol=1e-9)
    rebuilt = _np(U) * _np(S)[..., None, :] @ np.swapaxes(_np(V), -1, -2)
    np.testing.assert_allclose(rebuilt, a, atol=1e-9)
    eye = np.eye(4)
    np.testing.assert_allclose(
        np.swapaxes(_np(U), -1, -2) @ _np(U), np.broadcast_to(eye, S.shape + (4,)), atol=1e-9
    )


def test_svd_lowrank_subtracts_m():
    rng = np.random.default_rng(1)
    a, mean = _low_rank(rng, (10, 6), 2), rng.standard_normal((1, 6))
    _, S, _ = ember.svd_lowrank(ember.tensor(a + mean), q=3, M=ember.tensor(mean))
    want = torch.linalg.svdvals(torch.tensor(a))[:2].numpy()
    np.testing.assert_allclose(_np(S)[:2], want, rtol=1e-9)


def test_pca_lowrank_centres_as_pytorch():
    rng = np.random.default_rng(2)
    a = _low_rank(rng, (15, 6), 2) + 3.0
    _, S, _ = ember.pca_lowrank(ember.tensor(a), q=3)
    _, t_S, _ = torch.pca_lowrank(torch.tensor(a), q=3)
    np.testing.assert_allclose(_np(S)[:2], t_S[:2].numpy(), rtol=1e-9)
    _, S, _ = ember.pca_lowrank(ember.tensor(a), q=3, center=False)
    _, t_S, _ = torch.pca_lowrank(torch.tensor(a), q=3, center=False)
    np.testing.assert_allclose(_np(S)[:2], t_S[:2].numpy(), rtol=1e-9)


def test_singular_value_gradient_matches_pytorch():
    a = _low_rank(np.random.default_rng(3), (8, 5), 2)
    e_a = ember.tensor(a, requires_grad=True)
    t_a = torch.tensor(a, requires_grad=True)
    ember.svd_lowrank(e_a, q=2)[1].sum().backward()
    torch.linalg.svdvals(t_a)[:2].sum().backward()
    np.testing.assert_allclose(_np(e_a.grad), t_a.grad.numpy(), atol=1e-8)


@pytest.mark.parametrize("kwargs", [{"q": 7}, {"q": -1}, {"niter": -1}])
def test_pca_lowrank_refuses_as_pytorch(kwargs):
    a = np.ones((4, 6))
    with pytest.raises(ValueError) as theirs:
        torch.pca_lowrank(torch.tensor(a), **kwargs)
    with pytest.raises(ValueError, match=str(theirs.value).replace("(", r"\(").replace(")", r"\)")):
        ember.pca_lowrank(ember.tensor(a), **kwargs)
