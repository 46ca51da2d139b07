"""Datasets: the map-style and iterable protocols, and the usual combinators over them."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Sequence

from ... import _random
from ..._factories import randperm


class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i``, like ``torch.utils.data.Dataset``.

    Subclasses define ``__getitem__`` and usually ``__len__`` (samplers and ``len(DataLoader)``
    need it). ``a + b`` concatenates two datasets.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream of samples: subclasses define ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy of the dataset; use
    ``ember.utils.data.get_worker_info()`` inside ``__iter__`` to give each worker its shard.

    Example:
        >>> class Range(IterableDataset):
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __iter__(self):
        ...         info = get_worker_info()
        ...         first, step = (0, 1) if info is None else (info.id, info.num_workers)
        ...         return iter(range(first, self.n, step))
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of the ``i``-th rows of tensors that share their first dimension.

    Args:
        *tensors: tensors with the same size in dimension 0.
    """

    def __init__(self, *tensors) -> None:
        if any(t.size(0) != tensors[0].size(0) for t in tensors):
            sizes = [t.size(0) for t in tensors]
            raise ValueError(f"Size mismatch between tensors: first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples are tuples (positional args) or dicts (keyword args) of the given datasets' samples.

    Args:
        *args: datasets of equal length; samples are tuples.
        **kwargs: datasets of equal length; samples are dicts with these keys.
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given."
            )
        self.datasets = args or kwargs
        parts = args or tuple(kwargs.values())
        self._length = len(parts[0])
        if any(len(part) != self._length for part in parts):
            raise ValueError("Size mismatch between datasets")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: part[index] for key, part in self.datasets.items()}
        return tuple(part[index] for part in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of map-style datasets: index ``i`` runs through them in order.

    Args:
        datasets: the datasets to concatenate (not iterable datasets).
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for part in self.datasets:
            if isinstance(part, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(part) for part in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """The concatenation of iterable datasets, chained lazily.

    Args:
        datasets: the iterable datasets to chain.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for part in self.datasets:
            if not isinstance(part, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset (use ConcatDataset)")
            yield from part

    def __len__(self) -> int:
        return sum(len(part) for part in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Args:
        dataset: the whole dataset.
        indices: positions of the samples to keep.
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list[int]) -> list:
        # Keep the wrapped dataset's batched fetch when it has one.
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _fraction_lengths(total: int, fractions: Sequence[float]) -> list[int]:
    """Split ``total`` by fractions: floors first, then the remainder one by one, round robin."""
    lengths = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * fraction))
    for i in range(total - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return lengths


def random_split(
    dataset: Dataset,
    lengths: Sequence[int | float],
    generator: _random.Generator | None = _random.default_generator,
) -> list[Subset]:
    """Split a dataset into non-overlapping random subsets of the given lengths.

    Args:
        dataset: the dataset to split.
        lengths: the subsets' lengths, or fractions summing to 1 (floors, with the remainder
            given one by one to the first subsets).
        generator: the generator of the random permutation (the default generator when None).

    Returns:
        A list of ``Subset`` views of ``dataset``.

    Example:
        >>> gen = ember.Generator().manual_seed(0)
        >>> train, val = random_split(range(10), [0.8, 0.2], generator=gen)
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _fraction_lengths(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [
        Subset(dataset, indices[end - length : end])
        for end, length in zip(itertools.accumulate(lengths), lengths)
    ]
