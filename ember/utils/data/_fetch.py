"""Fetchers: turn what the sampler yields into a batch, the same way in the main process and in
workers (that is what makes batches with workers equal batches without)."""

from __future__ import annotations

MAP, ITERABLE = "map", "iterable"


class _MapFetcher:
    """Map-style datasets: the sampler yields an index, or a list of indices when batching."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        # A dataset may fetch a whole batch at once (PyTorch's __getitems__ protocol).
        self.getitems = getattr(dataset, "__getitems__", None)

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.getitems is not None:
            return self.collate_fn(self.getitems(index))
        return self.collate_fn([self.dataset[i] for i in index])


class _IterableFetcher:
    """Iterable datasets: the sampler only paces the fetches; samples come from the stream."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        batch = []
        for _ in index:
            try:
                batch.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < len(index)):
            raise StopIteration
        return self.collate_fn(batch)


_FETCHERS = {MAP: _MapFetcher, ITERABLE: _IterableFetcher}


def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    return _FETCHERS[kind](dataset, auto_collation, collate_fn, drop_last)
