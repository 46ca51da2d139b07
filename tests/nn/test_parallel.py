"""ember.nn.parallel in one process: DDP's bucket assignment against c10d's, DataParallel and
SyncBatchNorm against PyTorch's modules (the multi-rank behaviour is in tests/distributed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributed as tdist

import ember
from ember import nn
from ember.nn.parallel._buckets import assign_buckets


@pytest.mark.parametrize("seed", range(6))
def test_bucket_assignment_is_c10ds(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 600, 12).tolist()
    dtypes = [ember.float32 if rng.random() < 0.7 else ember.float64 for _ in sizes]
    ours = [ember.zeros(n, dtype=d) for n, d in zip(sizes, dtypes)]
    theirs = [torch.zeros(n, dtype=getattr(torch, d.name)) for n, d in zip(sizes, dtypes)]
    limits = [int(x) for x in sorted(rng.integers(200, 4000, 2))]
    expected, _ = tdist._compute_bucket_assignment_by_size(theirs, limits)
    assert assign_buckets(ours, limits) == expected
    # In readiness order (one dtype: c10d's order of leftover buckets across dtypes is a map's)
    same = [ember.zeros(n) for n in sizes]
    order = rng.permutation(len(sizes)).tolist()
    in_order = [torch.zeros(sizes[i]) for i in order]  # c10d takes them ready-ordered
    expected, _ = tdist._compute_bucket_assignment_by_size(
        in_order, limits, [False] * len(sizes), order
    )
    assert assign_buckets(same, limits, order) == expected


def test_data_parallel_is_a_pass_through_with_torchs_keys():
    torch.manual_seed(0)
    reference = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 2)))
    model = nn.DataParallel(nn.Sequential(nn.Linear(3, 2)))
    assert list(model.state_dict()) == list(reference.state_dict())
    x = ember.randn(4, 3)
    np.testing.assert_array_equal(model(x).detach().numpy(), model.module(x).detach().numpy())
    assert nn.DataParallel is nn.parallel.DataParallel
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        nn.DataParallel(nn.Linear(1, 1), device_ids=[0, 1])


def _net(lib):
    return lib.nn.Sequential(
        lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3), lib.nn.Sequential(lib.nn.BatchNorm1d(4))
    )


def test_convert_sync_batchnorm_like_torch():
    ours = nn.SyncBatchNorm.convert_sync_batchnorm(_net(ember))
    theirs = torch.nn.SyncBatchNorm.convert_sync_batchnorm(_net(torch))
    assert [type(m).__name__ for m in ours.modules()] == [
        type(m).__name__ for m in theirs.modules()
    ]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    bn = nn.BatchNorm1d(4)
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(bn)
    assert sync.weight is bn.weight and sync.running_mean is bn.running_mean


@pytest.mark.parametrize("training", [True, False])
def test_sync_batchnorm_on_one_process_is_batchnorm(training):
    x = np.random.default_rng(0).standard_normal((6, 3, 5))
    ours = nn.SyncBatchNorm(3).train(training)
    theirs = torch.nn.BatchNorm1d(3).train(training)
    out = ours(ember.from_numpy(x)).detach().numpy()
    expected = theirs(torch.from_numpy(x).float()).detach().numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-5, atol=1e-6
    )
    with pytest.raises(ValueError, match="expected at least 2D input"):
        ours(ember.ones(3))
