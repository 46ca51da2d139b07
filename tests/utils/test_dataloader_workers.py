"""DataLoader with worker processes: same batches as without, seeds, errors, clean shutdown."""

import gc
import glob
import multiprocessing
import os
import random
import time

import numpy as np
import pytest

import ember
from ember.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    get_worker_info,
)
from ember.utils.data._shared_memory import segment_prefix
from ember.utils.data._worker import numpy_seed

# Spawned workers import ember from scratch (seconds each): one test covers spawn, fork the rest.
FORK = "fork"


class Numbers(Dataset):
    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return ember.full((2,), i, dtype=ember.float32), i


class Shards(IterableDataset):
    """0..n-1, each worker taking every num_workers-th value from its id on."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        first, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(first, self.n, step))


class Seeds(Dataset):
    """What a worker's generators produce (batch_size=None)."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info()
        return info.id, info.seed, ember.rand(2).tolist(), random.random(), np.random.rand()


class Faulty(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 7:
            raise KeyError(f"sample {i} is broken")
        return i


class Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(1.5 if i == 1 else 0)
        return i


class Dying(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os._exit(3)
        return i


class Offset(Dataset):
    """Each worker's copy gets its offset from worker_init_fn."""

    offset = 0

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return self.offset + i


def init_offset(worker_id):
    get_worker_info().dataset.offset = 1000 * (worker_id + 1)


def views_of_one_storage(batch):
    x = ember.stack([s[0] for s in batch])
    return x, x.t(), x[1], ember.from_numpy(x.numpy()[:, ::-1]), x  # negative strides; x twice


def leftovers():
    """This process's worker segments still in /dev/shm (empty unless something leaked)."""
    return glob.glob(f"/dev/shm/{segment_prefix(os.getpid())}*")


def forked(dataset, **kwargs):
    return DataLoader(dataset, multiprocessing_context=FORK, **kwargs)


def batches(loader):
    return [(b[0].tolist(), b[1].tolist()) for b in loader]


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_workers_give_the_same_batches(context):
    ds = Numbers(37)
    ember.manual_seed(0)
    expected = batches(DataLoader(ds, batch_size=4, shuffle=True))
    ember.manual_seed(0)
    loader = DataLoader(
        ds, batch_size=4, shuffle=True, num_workers=2, multiprocessing_context=context
    )
    assert batches(loader) == expected
    assert leftovers() == []


@pytest.mark.parametrize("num_workers", [1, 3])
@pytest.mark.parametrize("kwargs", [{"batch_size": 5, "drop_last": True}, {"batch_size": None}])
def test_workers_match_single_process(num_workers, kwargs):
    ds = Numbers(23)
    expected = [repr(b) for b in DataLoader(ds, **kwargs)]
    loader = forked(ds, num_workers=num_workers, **kwargs)
    assert [repr(b) for b in loader] == expected


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")
def test_iterable_sharding_matches_torch():
    torch = pytest.importorskip("torch")

    class TorchShards(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            return iter(range(info.id, 11, info.num_workers))

    ours = forked(Shards(11), batch_size=2, num_workers=3)
    theirs = torch.utils.data.DataLoader(
        TorchShards(), batch_size=2, num_workers=3, multiprocessing_context=FORK
    )
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


def test_worker_seeds_like_torch():
    loader = forked(Seeds(), batch_size=None, num_workers=2)
    iterator = iter(loader)
    base = iterator._base_seed
    firsts = {}
    for worker_id, seed, values, py_value, np_value in iterator:
        firsts.setdefault(worker_id, (seed, values, py_value, np_value))
    assert sorted(firsts) == [0, 1]
    for worker_id, (seed, values, py_value, np_value) in firsts.items():
        assert seed == base + worker_id
        ember.manual_seed(seed)
        assert values == ember.rand(2).tolist()
        assert py_value == random.Random(seed).random()
        assert np_value == np.random.RandomState(numpy_seed(base, worker_id)).rand()


def test_numpy_seed_is_torchs():
    torch_worker = pytest.importorskip("torch.utils.data._utils.worker")
    for base, worker_id in [(0, 0), (12345, 3), ((1 << 63) - 1, 7), (987654321987, 0)]:
        assert numpy_seed(base, worker_id) == torch_worker._generate_state(base, worker_id)


def test_worker_init_fn_configures_each_copy():
    loader = forked(Offset(), batch_size=None, num_workers=2, worker_init_fn=init_offset)
    assert list(loader) == [1000, 2001, 1002, 2003, 1004, 2005]


def test_worker_error_is_reraised_with_its_traceback():
    loader = forked(Faulty(), batch_size=2, num_workers=2)
    with pytest.raises(KeyError) as caught:
        list(loader)
    message = str(caught.value)
    assert "Caught KeyError in DataLoader worker process 1" in message
    assert "sample 7 is broken" in message and "in __getitem__" in message
    del caught
    gc.collect()
    assert multiprocessing.active_children() == [] and leftovers() == []


def test_error_in_worker_init_fn():
    def broken_init(worker_id):
        raise ValueError(f"init of {worker_id} failed")

    loader = forked(range(4), num_workers=1, worker_init_fn=broken_init)
    with pytest.raises(ValueError, match="init of 0 failed"):
        list(loader)


def test_timeout():
    loader = forked(Slow(), num_workers=1, timeout=0.3)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0\.3 seconds"):
        list(loader)
    gc.collect()
    assert multiprocessing.active_children() == []


def test_dead_worker_is_reported():
    loader = forked(Dying(), num_workers=2)
    with pytest.raises(
        RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"
    ):
        list(loader)
    gc.collect()
    assert multiprocessing.active_children() == []


def test_early_break_leaks_nothing():
    loader = forked(Numbers(200), batch_size=2, num_workers=3)
    for _ in loader:
        break
    gc.collect()
    assert multiprocessing.active_children() == [] and leftovers() == []
    iterator = iter(loader)
    batch = next(iterator)
    pids = [w.pid for w in iterator._workers]
    del iterator
    assert multiprocessing.active_children() == [] and leftovers() == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert batch[1].tolist() == [0, 1]  # a batch outlives its iterator and its segment's name


def test_persistent_workers_are_reused():
    loader = forked(Numbers(9), batch_size=2, num_workers=2, persistent_workers=True)
    expected = batches(DataLoader(Numbers(9), batch_size=2))
    assert batches(loader) == expected
    pids = [w.pid for w in loader._iterator._workers]
    batch = next(iter(loader))  # leave the second epoch early: stale results must not leak in
    assert batches(loader) == expected
    assert [w.pid for w in loader._iterator._workers] == pids
    assert all(w.is_alive() for w in loader._iterator._workers)
    del loader, batch
    gc.collect()
    assert multiprocessing.active_children() == [] and leftovers() == []


def test_persistent_iterable_workers_restart_their_stream():
    loader = forked(Shards(7), batch_size=2, num_workers=2, persistent_workers=True)
    first = [b.tolist() for b in loader]
    assert first == [b.tolist() for b in loader]
    assert sorted(i for batch in first for i in batch) == list(range(7))


def test_tensors_cross_processes_intact():
    ds = Numbers(6)
    loader = forked(ds, batch_size=3, num_workers=2, collate_fn=views_of_one_storage)
    for x, xt, row, flipped, again in loader:
        assert xt._storage is x._storage and row._storage is x._storage  # sharing survives
        assert again is x
        np.testing.assert_array_equal(xt.numpy(), x.numpy().T)
        np.testing.assert_array_equal(row.numpy(), x.numpy()[1])
        np.testing.assert_array_equal(flipped.numpy(), x.numpy()[:, ::-1])


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16, ember.bool, ember.int8])
def test_dtypes_and_shapes_cross_processes(dtype):
    samples = [
        ember.ones(3, 2, dtype=dtype).t(),  # non-contiguous, alone on its storage
        ember.zeros(0, 4, dtype=dtype),
        ember.ones((), dtype=dtype),
    ]
    loader = forked([samples], batch_size=None, num_workers=1)
    (out,) = list(loader)
    for got, want in zip(out, samples):
        assert got.dtype is dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_uncollatable_batch_is_an_error():
    loader = forked(range(4), batch_size=2, num_workers=1, collate_fn=lambda batch: lambda: batch)
    with pytest.raises(Exception, match="DataLoader worker process 0"):
        list(loader)
