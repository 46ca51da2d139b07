"""Datasets and random_split, against torch.utils.data on the same data where it applies."""

import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i * i

    def __len__(self):
        return self.n


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def test_tensor_dataset_matches_torch(torch):
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    y = np.arange(6)
    ours = TensorDataset(ember.from_numpy(x), ember.from_numpy(y))
    theirs = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    assert len(ours) == len(theirs) == 6
    for i in (0, 3, -1):
        for a, b in zip(ours[i], theirs[i]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_tensor_dataset_size_mismatch():
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(ember.zeros(3, 2), ember.zeros(4))


def test_concat_dataset_matches_torch(torch):
    parts = [Squares(3), Squares(0), Squares(4)]
    ours = ConcatDataset(parts)
    theirs = torch.utils.data.ConcatDataset(parts)
    assert len(ours) == len(theirs) == 7
    assert ours.cumulative_sizes == theirs.cumulative_sizes
    assert [ours[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    with pytest.raises(ValueError):
        ours[-8]
    assert (Squares(2) + Squares(1))[2] == 0


def test_concat_dataset_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Count(0, 2)])


def test_chain_and_iterable_add():
    assert list(ChainDataset([Count(0, 2), Count(5, 7)])) == [0, 1, 5, 6]
    assert list(Count(0, 1) + Count(3, 4)) == [0, 3]
    assert len(ChainDataset([Count(0, 2), Count(5, 7)])) == 4


def test_subset_and_stack_dataset():
    sub = Subset(Squares(10), [9, 2, 4])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [81, 4, 16]
    assert sub.__getitems__([0, 2]) == [81, 16]
    stacked = StackDataset(Squares(3), Squares(3))
    assert stacked[2] == (4, 4)
    named = StackDataset(a=Squares(3), b=Squares(3))
    assert named[1] == {"a": 1, "b": 1} and len(named) == 3
    with pytest.raises(ValueError):
        StackDataset(Squares(3), Squares(4))


def test_random_split_lengths_and_partition():
    parts = random_split(range(10), [3, 7], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(i for p in parts for i in p) == list(range(10))


def test_random_split_fractions_like_torch(torch):
    for fractions in ([0.3, 0.3, 0.4], [0.5, 0.5], [0.25, 0.25, 0.5], [1.0]):
        ours = random_split(range(31), fractions, generator=ember.Generator().manual_seed(1))
        theirs = torch.utils.data.random_split(range(31), fractions, generator=torch.Generator())
        assert [len(p) for p in ours] == [len(p) for p in theirs]


def test_random_split_is_reproducible():
    a = random_split(range(20), [0.5, 0.5], generator=ember.Generator().manual_seed(3))
    b = random_split(range(20), [0.5, 0.5], generator=ember.Generator().manual_seed(3))
    assert [list(p) for p in a] == [list(p) for p in b]
    ember.manual_seed(5)
    c = random_split(range(20), [10, 10])
    ember.manual_seed(5)
    d = random_split(range(20), [10, 10])
    assert [list(p) for p in c] == [list(p) for p in d]


def test_random_split_errors_and_warnings():
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 1"):
        random_split(range(10), [0.5, 1.5, -1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = random_split(range(2), [0.9, 0.05, 0.05])
    assert [len(p) for p in parts] == [2, 0, 0]
    assert any("Length of split at index 1 is 0" in str(w.message) for w in caught)
