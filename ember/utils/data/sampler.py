"""Samplers: the order in which a DataLoader visits a map-style dataset's indices.

Random samplers draw from an ``ember.Generator``; without one they seed a private generator from
the default generator on every ``iter()``, so ``ember.manual_seed`` makes whole epochs
reproducible, as in PyTorch.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence, Sized

from ... import _dtype
from ..._factories import as_tensor, randint, randperm
from ..._random import Generator
from ...dispatcher.optable import OPS

_CHUNK = 32  # indices drawn per call when sampling with replacement (PyTorch's choice)
_SEED_BOUND = (1 << 63) - 1


def draw_seed(generator: Generator | None = None) -> int:
    """A non-negative 63-bit seed from ``generator`` (the default generator when None).

    PyTorch draws its seeds the same way: ``torch.empty((), dtype=torch.int64).random_()``.
    """
    return randint(0, _SEED_BOUND, (), dtype=_dtype.int64, generator=generator).item()


class Sampler:
    """Base class of samplers: an iterable of indices (or of lists of indices, for batches).

    Subclasses define ``__iter__`` and, when the count is known, ``__len__``.
    """

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``0, 1, ..., len(data_source) - 1`` in order.

    Args:
        data_source: the dataset (only its length is used).
    """

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: a permutation, or draws with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement (then ``num_samples`` may exceed the length).
        num_samples: how many indices per epoch (default: the dataset's length). Without
            replacement, larger counts chain several permutations.
        generator: the generator to draw from (default: one seeded from the default generator).

    Example:
        >>> list(RandomSampler(range(4), generator=ember.Generator().manual_seed(0)))
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, but got "
                f"num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:  # a fresh order every epoch, governed by ember.manual_seed
            generator = Generator().manual_seed(draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // _CHUNK):
                yield from randint(0, n, (_CHUNK,), generator=generator).tolist()
            yield from randint(0, n, (self.num_samples % _CHUNK,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=generator).tolist()
        yield from randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order every epoch.

    Args:
        indices: the indices to sample from.
        generator: the generator to draw from (default: the default generator).
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """Indices ``0..len(weights)-1`` drawn with probability proportional to ``weights``.

    Args:
        weights: non-negative weights (need not sum to one).
        num_samples: how many indices per epoch.
        replacement: draw with replacement; without it ``num_samples <= len(weights)``.
        generator: the generator to draw from (default: the default generator).

    Example:
        >>> list(WeightedRandomSampler([0.1, 0.9, 0.4], 5, replacement=True))
    """

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        weights = as_tensor(weights, dtype=_dtype.float64)
        if weights.ndim != 1:
            raise ValueError(
                "weights should be a 1d sequence but given weights have shape "
                f"{tuple(weights.shape)}"
            )
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = OPS["multinomial"](self.weights, self.num_samples, self.replacement, self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size``.

    Args:
        sampler: any iterable of indices.
        batch_size: indices per batch.
        drop_last: drop the last batch when it is smaller than ``batch_size``.

    Example:
        >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
