"""Samplers: orders, lengths, determinism under ember.manual_seed, and torch's BatchSampler."""

from collections import Counter

import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def gen(seed=0):
    return ember.Generator().manual_seed(seed)


def test_sequential():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler(range(5))) == 5


def test_random_is_a_permutation_and_reproducible():
    drawn = list(RandomSampler(range(50), generator=gen(1)))
    assert sorted(drawn) == list(range(50)) and drawn != list(range(50))
    assert list(RandomSampler(range(50), generator=gen(1))) == drawn
    assert list(RandomSampler(range(50), generator=gen(2))) != drawn


def test_random_without_generator_follows_manual_seed():
    sampler = RandomSampler(range(30))
    ember.manual_seed(7)
    first, second = list(sampler), list(sampler)
    assert first != second  # every epoch draws a fresh seed from the default generator
    ember.manual_seed(7)
    assert list(sampler) == first and list(sampler) == second


def test_random_num_samples():
    longer = list(RandomSampler(range(4), num_samples=10, generator=gen()))
    assert len(longer) == 10
    assert sorted(longer[:4]) == sorted(longer[4:8]) == [0, 1, 2, 3]  # whole permutations first
    shorter = list(RandomSampler(range(10), num_samples=3, generator=gen()))
    assert len(shorter) == 3 and len(set(shorter)) == 3


def test_random_with_replacement():
    sampler = RandomSampler(range(5), replacement=True, num_samples=70, generator=gen())
    drawn = list(sampler)
    assert len(drawn) == len(sampler) == 70
    assert set(drawn) <= set(range(5)) and len(set(drawn)) == 5


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"replacement": 1}, TypeError),
        ({"num_samples": 0}, ValueError),
        ({"num_samples": 2.5}, ValueError),
    ],
)
def test_random_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error):
        RandomSampler(range(3), **kwargs)


def test_subset_random():
    indices = [10, 20, 30, 40]
    drawn = list(SubsetRandomSampler(indices, generator=gen(3)))
    assert sorted(drawn) == indices and len(SubsetRandomSampler(indices)) == 4
    assert list(SubsetRandomSampler(indices, generator=gen(3))) == drawn


def test_weighted_with_replacement_follows_weights():
    sampler = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=gen(4))
    counts = Counter(sampler)
    assert counts[0] == 0 and len(sampler) == 4000
    assert 2.6 < counts[2] / counts[1] < 3.4


def test_weighted_without_replacement_is_distinct():
    drawn = list(WeightedRandomSampler([1.0, 2.0, 3.0, 4.0], 4, replacement=False, generator=gen()))
    assert sorted(drawn) == [0, 1, 2, 3]


def test_weighted_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_samples"):
        WeightedRandomSampler([1.0], 0)
    with pytest.raises(ValueError, match="replacement"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match="1d"):
        WeightedRandomSampler([[1.0, 2.0]], 1)


@pytest.mark.parametrize("batch_size", [1, 3, 4, 10])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_matches_torch(batch_size, drop_last):
    torch = pytest.importorskip("torch")
    ours = BatchSampler(SequentialSampler(range(10)), batch_size, drop_last)
    theirs = torch.utils.data.BatchSampler(range(10), batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


def test_batch_sampler_rejects_bad_arguments():
    for bad in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="batch_size"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(3), 2, 1)
