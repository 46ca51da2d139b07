"""DataLoader in the main process: against torch's DataLoader on the same data, and its checks."""

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
)

X = np.arange(23 * 3, dtype=np.float32).reshape(23, 3)
Y = np.arange(23) % 4


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def as_numpy(batch):
    if hasattr(batch, "numpy"):
        return batch.numpy()
    if isinstance(batch, dict):
        return {k: as_numpy(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [as_numpy(b) for b in batch]
    return batch


def assert_same_batches(ours, theirs):
    ours, theirs = [as_numpy(b) for b in ours], [as_numpy(b) for b in theirs]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_equal(a, b)


class Records(Dataset):
    """Samples that are dicts of numpy arrays and Python values."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        return {"x": X[i], "label": int(Y[i]), "weight": i / 10}


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"batch_size": 5},
        {"batch_size": 5, "drop_last": True},
        {"batch_size": 23},
        {"batch_size": 50},
        {"batch_size": None},
        {"sampler": [4, 2, 2, 9]},
        {"batch_size": 2, "sampler": range(7)},
        {"batch_sampler": [[0, 1, 2], [5], [22, 3]]},
    ],
    ids=repr,
)
def test_tensor_dataset_matches_torch(torch, kwargs):
    ours = DataLoader(TensorDataset(ember.from_numpy(X), ember.from_numpy(Y)), **kwargs)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(Y)), **kwargs
    )
    assert_same_batches(ours, theirs)
    assert len(ours) == len(theirs)


@pytest.mark.parametrize("batch_size", [None, 1, 4])
def test_dict_samples_match_torch(torch, batch_size):
    ours = DataLoader(Records(), batch_size=batch_size)
    theirs = torch.utils.data.DataLoader(Records(), batch_size=batch_size)
    assert_same_batches(ours, theirs)


@pytest.mark.parametrize("kwargs", [{}, {"batch_size": 3}, {"batch_size": 3, "drop_last": True}])
def test_iterable_dataset_matches_torch(torch, kwargs):
    class TorchStream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(10))

        def __len__(self):
            return 10

    ours = DataLoader(Stream(10), **kwargs)
    theirs = torch.utils.data.DataLoader(TorchStream(), **kwargs)
    assert_same_batches(ours, theirs)
    assert len(ours) == len(theirs)


def test_custom_collate_fn():
    loader = DataLoader(range(7), batch_size=3, collate_fn=lambda batch: sum(batch))
    assert list(loader) == [3, 12, 6]


def test_custom_batch_sampler_object():
    sampler = BatchSampler(SequentialSampler(range(6)), batch_size=4, drop_last=False)
    loader = DataLoader(range(100, 106), batch_sampler=sampler)
    assert [b.tolist() for b in loader] == [[100, 101, 102, 103], [104, 105]]
    assert len(loader) == 2


def test_shuffle_is_reproducible_and_complete():
    ds = TensorDataset(ember.arange(40))
    ember.manual_seed(0)
    first = [b[0].tolist() for b in DataLoader(ds, batch_size=8, shuffle=True)]
    ember.manual_seed(0)
    again = [b[0].tolist() for b in DataLoader(ds, batch_size=8, shuffle=True)]
    assert first == again
    order = [i for batch in first for i in batch]
    assert sorted(order) == list(range(40)) and order != list(range(40))
    loader = DataLoader(ds, batch_size=8, shuffle=True, generator=ember.Generator().manual_seed(1))
    epochs = [[b[0].tolist() for b in loader] for _ in range(2)]
    assert epochs[0] != epochs[1]  # a new order every epoch
    loader = DataLoader(ds, batch_size=8, shuffle=True, generator=ember.Generator().manual_seed(1))
    assert [b[0].tolist() for b in loader] == epochs[0]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_workers": -1}, "num_workers option should be non-negative"),
        ({"timeout": -1}, "timeout option should be non-negative"),
        ({"prefetch_factor": 2}, "prefetch_factor option could only be specified"),
        ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
        ({"multiprocessing_context": "fork"}, "multiprocessing_context can only be used"),
        ({"sampler": [0], "shuffle": True}, "mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
        ({"batch_size": None, "drop_last": True}, "batch_size=None option disables"),
    ],
)
def test_invalid_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(range(4), **kwargs)


@pytest.mark.parametrize("option", ["shuffle", "sampler", "batch_sampler"])
def test_iterable_dataset_rejects_samplers(option):
    value = {"shuffle": True, "sampler": [0], "batch_sampler": [[0]]}[option]
    with pytest.raises(ValueError, match=f"expected unspecified {option} option"):
        DataLoader(Stream(3), **{option: value})


def test_options_are_locked_after_init():
    loader = DataLoader(range(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 3
    loader.num_workers = 0  # not a locked option


def test_pin_memory_without_accelerator_warns_as_torch(monkeypatch):
    """Without an accelerator PyTorch warns once per iterator and loads unpinned batches."""
    torch = pytest.importorskip("torch")
    from ember import _accelerator

    monkeypatch.setattr(_accelerator, "BUILTIN", ("nodevice",))
    with pytest.warns(UserWarning) as theirs:
        list(torch.utils.data.DataLoader(list(range(4)), batch_size=2, pin_memory=True))
    loader = DataLoader(TensorDataset(ember.arange(4)), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning) as ours:
        batches = list(loader)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    assert ours[0].filename == __file__  # the warning points at the loop, not at ember
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3]]


class _PinningRuntime:
    """A runtime whose host_alloc hands out numpy memory it remembers as pinned."""

    def __init__(self):
        self.pinned = []

    def host_alloc(self, nbytes):
        raw = np.empty(max(nbytes, 1), np.uint8)
        self.pinned.append(raw)
        return raw

    def is_pinned(self, owner) -> bool:
        return any(owner is raw or getattr(owner, "base", None) is raw for raw in self.pinned)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_pins_every_tensor_of_a_batch(monkeypatch, num_workers):
    """With an accelerator that pins, batches come back pinned, structure kept (PyTorch)."""
    from ember import _accelerator, _pinned
    from ember.utils.data import _pin

    runtime = _PinningRuntime()
    monkeypatch.setattr(_accelerator, "current_accelerator", lambda: "cuda")
    monkeypatch.setattr(_pinned, "pinning_runtime", lambda device=None: runtime)
    monkeypatch.setattr(_pin, "pinning_runtime", lambda device=None: runtime)
    samples = [{"x": ember.full((2,), float(i)), "y": (i, "label")} for i in range(4)]
    loader = DataLoader(samples, batch_size=2, pin_memory=True, num_workers=num_workers)
    batches = list(loader)
    assert [b["x"].tolist() for b in batches] == [[[0.0] * 2, [1.0] * 2], [[2.0] * 2, [3.0] * 2]]
    assert all(b["x"].is_pinned() and b["y"][0].is_pinned() for b in batches)
    assert [b["y"][1] for b in batches] == [("label", "label")] * 2  # a tuple stays a tuple
