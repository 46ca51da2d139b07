"""DistributedSampler against torch.utils.data.distributed.DistributedSampler: given the same
permutation (torch's randperm made to return ember's), the ranks' indices are PyTorch's, with
and without padding, drop_last, epochs and uneven lengths."""

from __future__ import annotations

import pytest
import torch
import torch.utils.data.distributed as torch_distributed

import ember
from ember.utils.data.distributed import DistributedSampler


def _ember_permutation(n, generator=None, **_):
    seed = generator.initial_seed()
    g = ember.Generator()
    g.manual_seed(seed)
    return torch.tensor(ember.randperm(n, generator=g).tolist())


@pytest.mark.parametrize("length", [1, 5, 10, 11, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_indices_are_torchs(monkeypatch, length, replicas, shuffle, drop_last):
    monkeypatch.setattr(torch_distributed.torch, "randperm", _ember_permutation)
    data = list(range(length))
    for epoch in (0, 3):
        for rank in range(replicas):
            ours = DistributedSampler(data, replicas, rank, shuffle, seed=7, drop_last=drop_last)
            theirs = torch_distributed.DistributedSampler(
                data, replicas, rank, shuffle, seed=7, drop_last=drop_last
            )
            ours.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(ours) == list(theirs)
            assert len(ours) == len(theirs)


def test_epochs_reshuffle_and_ranks_partition():
    data = list(range(12))
    first = [list(DistributedSampler(data, 3, r, seed=1)) for r in range(3)]
    assert sorted(i for part in first for i in part) == data
    sampler = DistributedSampler(data, 3, 0, seed=1)
    sampler.set_epoch(1)
    assert list(sampler) != first[0]


def test_invalid_rank_like_torch():
    with pytest.raises(
        ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"
    ):
        DistributedSampler(range(4), num_replicas=2, rank=2)
