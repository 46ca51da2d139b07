"""``DistributedSampler``: each rank's share of a dataset's indices (PyTorch's algorithm)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from ..._factories import randperm
from ..._random import Generator
from .sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of rank ``rank`` out of ``num_replicas``: every ``num_replicas``-th index of
    the (shuffled) dataset, padded by repeating its start so every rank gets as many (or with
    ``drop_last``, trimmed to a multiple of ``num_replicas``).

    The order is PyTorch's for the same permutation; the permutation is ember's ``randperm``
    of a generator seeded with ``seed + epoch``, the same on every rank (ember's generator is
    not PyTorch's, so shuffled orders differ from PyTorch's, as ``randperm`` does).

    Args:
        dataset: the dataset (only its length is used).
        num_replicas: ranks sharing it (default: the world size).
        rank: this rank (default: ``ember.distributed.get_rank()``).
        shuffle: shuffle the indices each epoch.
        seed: the shuffle's seed (the same on every rank).
        drop_last: drop the tail instead of padding.

    Example:
        >>> sampler = DistributedSampler(dataset)
        >>> loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        >>> for epoch in range(epochs):
        ...     sampler.set_epoch(epoch)
    """

    def __init__(
        self,
        dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def _permutation(self) -> list[int]:
        if not self.shuffle:
            return list(range(len(self.dataset)))
        generator = Generator()
        generator.manual_seed(self.seed + self.epoch)
        return randperm(len(self.dataset), generator=generator).tolist()

    def __iter__(self) -> Iterator[int]:
        indices = self._permutation()
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use the permutation of ``seed + epoch`` next (call it before each epoch)."""
        self.epoch = epoch
