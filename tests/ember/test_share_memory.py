"""``Tensor.share_memory_`` / ``is_shared`` / ``Module.share_memory``: storages move into shared
memory in place, so a forked process writes the same bytes (PyTorch's Hogwild pattern)."""

from __future__ import annotations

import multiprocessing
import sys

import numpy as np
import pytest

import ember

fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method"
)


def _in_child(fn, *args) -> None:
    process = multiprocessing.get_context("fork").Process(target=fn, args=args)
    process.start()
    process.join(300)
    if process.is_alive():  # stuck: ours to stop, so that it does not outlive the test
        process.kill()
        process.join()
    assert process.exitcode == 0


def _add_ten(t):
    t.add_(10)


@fork
def test_a_forked_process_writes_into_a_shared_tensor():
    x = ember.arange(6.0).view(2, 3)
    row = x[1]
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and row.is_shared()  # views share the storage, and follow it
    _in_child(_add_ten, x)
    assert x.tolist() == [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]
    assert row.tolist() == [13.0, 14.0, 15.0]


@fork
def test_without_sharing_the_child_writes_its_own_copy():
    x = ember.arange(3.0)
    _in_child(_add_ten, x)
    assert x.tolist() == [0.0, 1.0, 2.0]


def test_sharing_keeps_values_and_is_idempotent():
    x = ember.randn(64, 64)  # large enough to come from the caching allocator
    before = x.tolist()
    x.share_memory_()
    ptr = x.data_ptr()
    x.share_memory_()
    assert x.data_ptr() == ptr  # already shared: nothing moves
    assert x.tolist() == before
    assert np.array_equal(x.numpy(), np.array(before, dtype=np.float32))
    assert (x * 2).tolist() == (np.array(before, dtype=np.float32) * 2).tolist()


def test_empty_and_integer_tensors_can_be_shared():
    assert ember.zeros(0).share_memory_().is_shared()
    ints = ember.arange(5).share_memory_()
    assert ints.tolist() == [0, 1, 2, 3, 4]


def test_a_read_only_tensor_becomes_a_writable_shared_copy():
    raw = bytes(np.arange(3, dtype=np.float32).tobytes())
    with pytest.warns(UserWarning, match="not writable"):
        t = ember.from_numpy(np.frombuffer(raw, dtype=np.float32))
    t.share_memory_()
    t.add_(1)
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert raw == np.arange(3, dtype=np.float32).tobytes()


@fork
def test_module_share_memory_shares_parameters_buffers_and_grads():
    model = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.BatchNorm1d(2))
    model[0].weight.grad = ember.zeros(2, 3)
    assert model.share_memory() is model
    tensors = [*model.parameters(), *model.buffers(), model[0].weight.grad]
    assert all(t.is_shared() for t in tensors)
    before = model[0].weight.detach().clone()

    def step(m):
        with ember.no_grad():
            m[0].weight.add_(1)

    _in_child(step, model)
    assert np.allclose(model[0].weight.detach().numpy(), before.numpy() + 1)


def test_xpu_tensors_cannot_be_shared():
    """As PyTorch for devices without inter-process handles: an error naming the way out."""
    if not ember.xpu.is_available():
        pytest.skip("no xpu device")
    x = ember.ones(2, device="xpu")
    with pytest.raises(RuntimeError, match=r"xpu memory cannot be shared .*t\.cpu\(\)"):
        x.share_memory_()
    assert not x.is_shared() and x.tolist() == [1.0, 1.0]


def test_batches_from_dataloader_workers_are_shared():
    """Worker batches arrive in shared memory, as in PyTorch."""
    if sys.platform != "linux":
        pytest.skip("worker processes are tested on linux")
    data = ember.utils.data.TensorDataset(ember.arange(8.0))
    loader = ember.utils.data.DataLoader(data, batch_size=4, num_workers=1)
    (batch,) = next(iter(loader))
    assert batch.is_shared()
