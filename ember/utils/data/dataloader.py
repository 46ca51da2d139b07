"""DataLoader: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` the iterator hands sampler indices to workers round robin (at most
``prefetch_factor`` tasks per worker in flight) and yields their results in task order, so the
batches are those the main process would have made. Bookkeeping follows PyTorch's
``_MultiProcessingDataLoaderIter``: ``_task_info[i]`` holds the worker of task ``i`` and, once
it arrived early, its result.
"""

from __future__ import annotations

import itertools
import multiprocessing
import queue
import weakref
from multiprocessing import resource_tracker

from . import _shared_memory
from ._collate import default_collate, default_convert
from ._fetch import ITERABLE, MAP, create_fetcher
from ._pool import WORKER_EXITED, WorkerPool
from ._worker import (
    ExceptionWrapper,
    IterableDatasetStopIteration,
    ResumeIteration,
    worker_loop,
)
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, draw_seed

# How long a blocked get waits before checking that the workers are alive (seconds).
STATUS_CHECK_INTERVAL = 1.0


class _InfiniteConstantSampler(Sampler):
    """Paces fetches from an IterableDataset: it yields None forever."""

    def __iter__(self):
        return itertools.repeat(None)


class DataLoader:
    """Iterates over batches of a dataset, like ``torch.utils.data.DataLoader``.

    Args:
        dataset: a map-style ``Dataset`` (or anything with ``__getitem__`` and ``__len__``) or
            an ``IterableDataset``.
        batch_size: samples per batch; None turns batching off (samples come one by one,
            through ``default_convert``).
        shuffle: reshuffle every epoch (``RandomSampler`` drawing from ``generator``).
        sampler: the order of indices (excludes ``shuffle``).
        batch_sampler: yields lists of indices (excludes ``batch_size``, ``shuffle``,
            ``sampler`` and ``drop_last``).
        num_workers: worker processes; 0 loads in the main process.
        collate_fn: turns a list of samples into a batch (default: ``default_collate``).
        pin_memory: accepted for compatibility; host memory needs no pinning here.
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers (0: wait forever).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after seeding.
        multiprocessing_context: ``"fork"``, ``"spawn"``, ``"forkserver"`` or a context object
            (default: the platform's default).
        generator: the generator of the shuffle order and of the workers' base seed.
        prefetch_factor: tasks in flight per worker (default 2 with workers).
        persistent_workers: keep the workers alive between epochs.
        pin_memory_device: accepted for compatibility.
        in_order: accepted for compatibility (batches always come in sampler order).

    Each worker seeds ``ember``, ``random`` and ``numpy`` with ``base_seed + worker_id``, where
    the base seed is drawn from ``generator`` (or the default generator) once per iterator, so
    ``ember.manual_seed`` makes runs reproducible.

    Example:
        >>> ds = TensorDataset(ember.randn(100, 3), ember.arange(100))
        >>> for x, y in DataLoader(ds, batch_size=32, shuffle=True, num_workers=2):
        ...     pass
    """

    _LOCKED = frozenset(
        ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
    )

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        _check_workers(num_workers, timeout, prefetch_factor, persistent_workers)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.generator = generator

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = ITERABLE
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            self._dataset_kind = MAP
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None:
            if self._dataset_kind == ITERABLE:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None
        self._initialized = True

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in self._LOCKED:
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers == 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                context = multiprocessing.get_context(context)
            elif not hasattr(context, "Process"):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a "
                    f"string specifying the start method, but got {context!r}"
                )
        self._multiprocessing_context = context

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if not self.persistent_workers or self.num_workers == 0:
            return self._get_iterator()
        if self._iterator is None:
            self._iterator = self._get_iterator()
        else:
            self._iterator._reset(self)
        return self._iterator

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._dataset_kind == MAP:
            return len(self._index_sampler)
        length = len(self.dataset)
        if self.batch_size is None:
            return length
        if self.drop_last:
            return length // self.batch_size
        return -(-length // self.batch_size)


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers) -> None:
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            "multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing. let "
            "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_iterable_options(shuffle, sampler, batch_sampler) -> None:
    for name, value in (("shuffle", shuffle), ("sampler", sampler)):
        if value not in (None, False):
            raise ValueError(
                f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                f"{name}={value}"
            )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
            f"got batch_sampler={batch_sampler}"
        )


class _BaseIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._sampler_iter = iter(self._index_sampler)
        # Drawn with or without workers, so that both consume the generator alike.
        self._base_seed = draw_seed(loader.generator)

    def __iter__(self):
        return self

    def _reset(self, loader: DataLoader) -> None:
        self._sampler_iter = iter(self._index_sampler)

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        return self._next_data()

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = create_fetcher(
            self._dataset_kind,
            self._dataset,
            self._auto_collation,
            self._collate_fn,
            self._drop_last,
        )

    def _next_data(self):
        return self._fetcher.fetch(self._next_index())


class _MultiProcessIter(_BaseIter):
    """Workers fetch; the main process feeds them indices and puts their results in order."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        context = loader.multiprocessing_context or multiprocessing.get_context()
        # Forked workers must report their shared-memory segments to the parent's resource
        # tracker (the one that sees them unlinked), not start trackers of their own.
        resource_tracker.ensure_running()
        self._pool = WorkerPool(context)
        self._shutdown_workers = weakref.finalize(self, self._pool.shutdown)
        self._index_queues = self._pool.index_queues
        for worker_id in range(self._num_workers):
            self._start_worker(worker_id, loader.worker_init_fn)
        self._workers = self._pool.workers
        self._reset(loader, first_iter=True)

    def _start_worker(self, worker_id: int, init_fn) -> None:
        def args_of(index_queue, pipe):
            args = (self._dataset_kind, self._dataset, index_queue, pipe)
            args += (self._pool.done_event, self._auto_collation, self._collate_fn)
            return args + (self._drop_last, self._base_seed, init_fn, worker_id, self._num_workers)

        self._pool.start(worker_loop, args_of)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        super()._reset(loader)
        self._send_idx = 0  # next task to hand out
        self._rcvd_idx = 0  # next task to yield
        self._task_info: dict = {}  # task -> (worker,) or (worker, result)
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for index_queue in self._index_queues:
                index_queue.put(ResumeIteration())
            waiting = self._num_workers
            while waiting:  # results of an epoch left early are dropped on the way
                idx, _ = self._get_data()
                waiting -= isinstance(idx, ResumeIteration)
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                break
        else:
            return  # every worker is done (iterable dataset exhausted)
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._send_idx += 1

    def _get_data(self):
        """The next ``(task, result)`` from any worker, with its tensors already mapped."""
        interval = self._timeout if self._timeout > 0 else STATUS_CHECK_INTERVAL
        while True:
            try:
                got = self._pool.receive(self._workers_status, interval)
            except queue.Empty:
                self._check_workers_alive()
                if self._timeout > 0:
                    raise RuntimeError(
                        f"DataLoader timed out after {self._timeout} seconds"
                    ) from None
                continue
            if got is WORKER_EXITED:  # an active worker's exit is an error; others are done
                self._check_workers_alive()
                continue
            idx, message = got
            return idx, None if message is None else _shared_memory.unpack(message)

    def _check_workers_alive(self) -> None:
        dead = self._pool.dead(self._workers_status)
        if dead:
            self._shutdown_workers()
            pids = ", ".join(map(str, dead))
            raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _next_data(self):
        while True:
            # Skip tasks of workers that stopped (their iterable shard ran out) without a result.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_status[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                return self._process_data(self._task_info.pop(self._rcvd_idx)[1])
            idx, data = self._get_data()
            if isinstance(data, IterableDatasetStopIteration):
                self._stop_worker(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            return self._process_data(data)

    def _process_data(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _stop_worker(self, worker_id: int) -> None:
        """A worker whose shard is exhausted gets no more tasks (and exits unless persistent)."""
        self._workers_status[worker_id] = False
        if not self._persistent_workers:
            self._index_queues[worker_id].put(None)
