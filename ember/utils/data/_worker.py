"""The DataLoader worker process: seeding, the fetch loop, and what travels back to the parent.

A worker reads ``(task index, sampler index)`` pairs from its own index queue, fetches and
collates, and sends ``(task index, packed batch)`` through its own ``_pool.ResultPipe`` (tensor
bytes in shared memory, see ``_shared_memory``). ``None`` on the index queue means "exit"; a
``ResumeIteration`` starts a new epoch for persistent workers.
"""

from __future__ import annotations

import functools
import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from ... import _random
from ...dispatcher.memory import backend_for
from . import _shared_memory
from ._fetch import ITERABLE, create_fetcher

# How often a blocked worker checks that its parent is still alive (seconds).
POLL_INTERVAL = 1.0


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows about itself (``get_worker_info()`` inside a worker).

    Attributes:
        id: this worker's index, 0 to ``num_workers - 1``.
        num_workers: how many workers the DataLoader runs.
        seed: the seed this worker's generators were seeded with (base seed + ``id``).
        dataset: this worker's copy of the dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The current worker's ``WorkerInfo``, or None in the main process.

    Use it in ``IterableDataset.__iter__`` to shard the stream, or in ``worker_init_fn`` to
    configure each worker's copy of the dataset.
    """
    return _worker_info


class ExceptionWrapper:
    """An exception with its formatted traceback, to re-raise in another process."""

    def __init__(self, where: str):
        exc_type, exc, tb = sys.exc_info()
        # Keep the type only if the parent can unpickle it (a local class would not).
        self.exc_type = exc_type if _importable(exc_type) else RuntimeError
        self.exc_name = exc_type.__name__
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    """KeyError calls repr() on its message; this keeps the traceback's line breaks readable."""

    def __repr__(self):
        return self


def _importable(cls) -> bool:
    module = sys.modules.get(cls.__module__)
    return getattr(module, cls.__qualname__, None) is cls


@dataclass(frozen=True)
class IterableDatasetStopIteration:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers at the start of an epoch; they echo it back when ready."""


def numpy_seed(base_seed: int, worker_id: int) -> list[int]:
    """The numpy seed of a worker: PyTorch's choice, numpy's SeedSequence over both numbers."""
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]
    return np.random.SeedSequence(entropy).generate_state(4).tolist()


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    _random.manual_seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    return seed


def _one_thread() -> None:
    """One kernel thread per worker, like PyTorch: N workers must not start N thread pools."""
    set_threads = getattr(backend_for("cpu").runtime, "set_num_threads", None)
    if set_threads is not None:
        set_threads(1)


class _Worker:
    """A worker's dataset side: its fetcher, and the error that stops it, if any."""

    def __init__(self, kind, dataset, auto_collation, collate_fn, drop_last, init_fn, worker_id):
        self.where = f"in DataLoader worker process {worker_id}"
        self.worker_id = worker_id
        self.kind = kind
        self.make_fetcher = functools.partial(
            create_fetcher, kind, dataset, auto_collation, collate_fn, drop_last
        )
        self.error = None  # an init failure answers every task
        self.exhausted = False
        try:
            if init_fn is not None:
                init_fn(worker_id)
            self.fetcher = self.make_fetcher()
        except Exception:
            self.error = ExceptionWrapper(self.where)

    def resume(self) -> None:
        self.exhausted = False
        if self.error is None:
            self.fetcher = self.make_fetcher()  # a new epoch: iterable datasets start over

    def run(self, index):
        """The packed result of one task: a batch, an error, or the end of the stream."""
        if self.error is not None:
            return _pack(self.error, self.where)
        try:
            data = self.fetcher.fetch(index)
        except StopIteration:
            if self.kind != ITERABLE:
                data = ExceptionWrapper(self.where)
            else:
                data, self.exhausted = IterableDatasetStopIteration(self.worker_id), True
        except Exception:
            data = ExceptionWrapper(self.where)
        return _pack(data, self.where)


def worker_loop(
    dataset_kind,
    dataset,
    index_queue,
    data_queue,
    done_event,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
):
    """The body of a worker process (started by the DataLoader's multi-process iterator)."""
    global _worker_info
    parent_pid = os.getppid()  # the process that started us; if it dies, we stop
    data_queue.close_reader()
    try:
        seed = _seed_worker(base_seed, worker_id)
        _one_thread()
        _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
        worker = _Worker(
            dataset_kind, dataset, auto_collation, collate_fn, drop_last, init_fn, worker_id
        )
        while os.getppid() == parent_pid:
            try:
                task = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                continue
            if task is None:
                return
            if isinstance(task, ResumeIteration):
                worker.resume()
                data_queue.put((task, None))
            elif not (done_event.is_set() or worker.exhausted):  # else just drain the queue
                idx, index = task
                data_queue.put((idx, worker.run(index)))
    except (KeyboardInterrupt, BrokenPipeError):
        pass  # interrupted, or the parent is gone: it sees the exit or no longer cares


def _pack(data, where):
    try:
        return _shared_memory.pack(data)
    except Exception:
        # An unpicklable batch must reach the parent as an error, not vanish in the queue.
        return _shared_memory.pack(ExceptionWrapper(where))
