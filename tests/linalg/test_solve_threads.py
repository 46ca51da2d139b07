"""The CPU solves' threaded paths (backend_cpu csrc/lapack.c) against torch.linalg: a batch large
enough to run one matrix per OpenMP thread, a single solve large enough to split its right-hand
sides (columns on the left, rows on the right) over the threads, and solve's LU of A^T for a
row-major A; with two threads and with one, so both sides of each threshold run."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# (batch, n, right-hand sides): below and above the C side's parallel threshold (2^17 work, a
# LAPACK call counting its multiply-adds plus 1024): issue 14's 64 systems of 32 x 32 and 64 of
# 16 x 16 split over the threads, 64 of 8 x 8 and 3 of 16 x 16 stay on one.
SHAPES = [
    ((), 8, 3),
    ((), 256, 256),
    ((3,), 16, 2),
    ((64,), 8, 1),
    ((64,), 16, 1),
    ((64,), 32, 1),
    ((24,), 128, 64),
]


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    before = ember.get_num_threads()
    ember.set_num_threads(request.param)
    yield request.param
    ember.set_num_threads(before)


def _spd(rng, batch, n):
    a = rng.standard_normal((*batch, n, n)) + n**0.5 * np.eye(n)
    return a, a @ np.swapaxes(a, -1, -2) / n + np.eye(n)


def _close(got, want, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("batch, n, k", SHAPES)
def test_solve_and_lu(threads, batch, n, k, rng):
    a, _ = _spd(rng, batch, n)
    b = rng.standard_normal((*batch, n, k))
    for A_np in (a, np.swapaxes(a, -1, -2)):  # row-major (solved as A^T) and column-major A
        A, tA = ember.tensor(A_np), torch.tensor(A_np)
        for left in (True, False):
            B_np = b if left else np.swapaxes(b, -1, -2)
            got = ember.linalg.solve(A, ember.tensor(B_np), left=left)
            _close(got, torch.linalg.solve(tA, torch.tensor(B_np), left=left))
        _close(ember.linalg.inv(A), torch.linalg.inv(tA), atol=1e-9)


@pytest.mark.parametrize("batch, n, k", SHAPES)
def test_cholesky_and_triangular_solves(threads, batch, n, k, rng):
    _, s = _spd(rng, batch, n)
    L, tL = ember.linalg.cholesky(ember.tensor(s)), torch.linalg.cholesky(torch.tensor(s))
    _close(L, tL)
    b = rng.standard_normal((*batch, n, k))
    for upper, left, factor, t_factor in ((False, True, L, tL), (True, False, L.mT, tL.mT)):
        B_np = b if left else np.swapaxes(b, -1, -2)
        got = ember.linalg.solve_triangular(factor, ember.tensor(B_np), upper=upper, left=left)
        want = torch.linalg.solve_triangular(t_factor, torch.tensor(B_np), upper=upper, left=left)
        _close(got, want)


@pytest.mark.parametrize("batch, n", [((), 256), ((24,), 128)])
def test_cholesky_backward(threads, batch, n, rng):
    _, s = _spd(rng, batch, n)
    g = rng.standard_normal((*batch, n, n))
    S, tS = ember.tensor(s, requires_grad=True), torch.tensor(s, requires_grad=True)
    ember.linalg.cholesky(S).backward(ember.tensor(g))
    torch.linalg.cholesky(tS).backward(torch.tensor(g))
    _close(S.grad, tS.grad, rtol=1e-8, atol=1e-9)


def test_singular_element_of_a_parallel_batch_is_named(threads, rng):
    a, _ = _spd(rng, (24,), 128)
    a[17] = 0
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        torch.linalg.solve(torch.tensor(a), torch.tensor(a))
    with pytest.raises(ember.linalg.LinAlgError) as ours:
        ember.linalg.solve(ember.tensor(a), ember.tensor(a))
    assert str(ours.value) == str(theirs.value)
    assert "(Batch element 17)" in str(ours.value)
    _, info = ember.linalg.solve_ex(ember.tensor(a), ember.tensor(a))
    _, t_info = torch.linalg.solve_ex(torch.tensor(a), torch.tensor(a))
    np.testing.assert_array_equal(info.numpy(), t_info.numpy())


@pytest.mark.parametrize("batch, n, k", [s for s in SHAPES if s[0]])
def test_batched_results_do_not_depend_on_the_thread_count(batch, n, k, rng):
    """Each matrix of a batch is one LAPACK call on one thread whatever the split: the same bits
    on one thread and on two."""
    a, s = _spd(rng, batch, n)
    b = rng.standard_normal((*batch, n, k))
    A, S, B = ember.tensor(a), ember.tensor(s), ember.tensor(b)

    def results():
        L = ember.linalg.cholesky(S)
        return [
            ember.linalg.solve(A, B),
            ember.linalg.inv(A),
            *ember.linalg.lu_factor(A),
            L,
            ember.linalg.solve_triangular(L, B, upper=False),
        ]

    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = results()
        ember.set_num_threads(2)
        two = results()
    finally:
        ember.set_num_threads(before)
    for x, y in zip(one, two):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
