"""Tensors through ember.multiprocessing's queues, pipes, pools and process arguments: the
receiver maps the sender's memory (writes are seen on both sides), under both sharing
strategies, with PyTorch's behaviour as the oracle where the two can be run side by side."""

from __future__ import annotations

import multiprocessing as stdlib_mp
import os
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.multiprocessing as torch_mp

import ember
import ember.multiprocessing as mp
from ember.multiprocessing import reductions

from . import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="sharing is tested on Linux")

FORK = mp.get_context("fork")
LIBS = {"ember": (ember, mp), "torch": (torch, torch_mp)}


def round_trip(obj, pids=None):
    """``obj`` sent to a forked child and back (the child stays alive while it is read);
    the child's pid is appended to ``pids``."""
    inbox, outbox, child = children.start(FORK, children.echo)
    if pids is not None:
        pids.append(child.pid)
    try:
        inbox.put(obj)
        return outbox.get(timeout=120)
    finally:
        inbox.put(None)
        child.join(120)


def test_strategies_are_pytorchs():
    assert mp.get_all_sharing_strategies() == torch_mp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == torch_mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError) as ours:
        mp.set_sharing_strategy("shm")
    with pytest.raises(AssertionError) as theirs:
        torch_mp.set_sharing_strategy("shm")
    assert str(ours.value).split(",")[0] == str(theirs.value).split(",")[0]
    assert mp.get_sharing_strategy() == "file_descriptor"


def test_drop_in_for_multiprocessing():
    assert set(stdlib_mp.__all__) <= set(mp.__all__)
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "get_context", "Pipe", "Manager"):
        assert getattr(mp, name) is getattr(stdlib_mp, name)
    assert {"spawn", "start_processes", "ProcessRaisedException"} <= set(dir(mp))


@pytest.mark.parametrize("name", ["ember", "torch"])
def test_child_writes_are_seen_and_views_come_back_as_views(name, strategy):
    m, lib_mp = LIBS[name]
    lib_mp.set_sharing_strategy(strategy)
    try:
        ctx = lib_mp.get_context("fork")
        inbox, outbox, child = children.start(ctx, children.add_one_and_send_back)
        x = m.arange(4.0)
        inbox.put(x)
        back = outbox.get(timeout=120)
        assert outbox.get(timeout=120)[0] == "done"
        inbox.put(None)
        child.join(120)
        assert x.is_shared()  # moved into shared memory, in place, on its first send
        assert x.tolist() == [1.0, 2.0, 3.0, 4.0]
        assert back.tolist() == [2.0, 3.0, 4.0]
        assert back.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        back.mul_(10)
        assert x.tolist() == [1.0, 20.0, 30.0, 40.0]
    finally:
        lib_mp.set_sharing_strategy("file_descriptor")


def test_storage_identity_survives(strategy):
    x = ember.arange(12.0).view(3, 4)
    a, b, again = round_trip((x, x.t(), x))
    assert a is again  # one tensor, one object
    assert b._storage is a._storage  # views of one storage share one storage object
    assert a._storage is x._storage  # back home: the sender's own storage
    np.testing.assert_array_equal(b.numpy(), x.numpy().T)


@pytest.mark.parametrize(
    "dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int64,
              ember.int8, ember.uint8, ember.bool],
)  # fmt: skip
def test_dtypes_shapes_and_strides(dtype):
    base = ember.arange(24).reshape(2, 3, 4).to(dtype)
    samples = [base, base.permute(2, 0, 1), base[:, 1], base[..., ::2], ember.ones((), dtype=dtype)]
    for sent, got in zip(samples, round_trip(samples)):
        assert got.dtype is dtype and got.shape == sent.shape and got.stride() == sent.stride()
        np.testing.assert_array_equal(got.float().numpy(), sent.float().numpy())


def test_empty_tensors_and_empty_storages():
    got = round_trip([ember.zeros(0), ember.ones(0, 3, dtype=ember.int64)])
    assert [t.shape for t in got] == [(0,), (0, 3)] and got[1].dtype is ember.int64


def test_parameters_buffers_and_grad_flags():
    p = ember.nn.Parameter(ember.randn(3))
    frozen = ember.nn.Parameter(ember.arange(3), requires_grad=False)
    buf = ember.nn.Buffer(ember.ones(2), persistent=False)
    leaf = ember.randn(2, requires_grad=True)
    got_p, got_frozen, got_buf, got_leaf = round_trip([p, frozen, buf, leaf])
    assert type(got_p) is ember.nn.Parameter and got_p.requires_grad
    assert type(got_frozen) is ember.nn.Parameter and not got_frozen.requires_grad
    assert type(got_buf) is ember.nn.Buffer and got_buf.persistent is False
    assert got_leaf.requires_grad and got_leaf.is_leaf
    assert got_p._storage is p._storage


@pytest.mark.parametrize("name", ["ember", "torch"])
def test_non_leaf_requiring_grad_is_refused(name):
    m, _ = LIBS[name]
    y = m.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        stdlib_mp.reduction.ForkingPickler.dumps(y)


def test_a_module_through_a_queue_is_shared():
    model = ember.nn.Linear(3, 2)
    got = round_trip(model)
    with ember.no_grad():
        got.weight.add_(1)
    np.testing.assert_array_equal(model.weight.detach().numpy(), got.weight.detach().numpy())


def test_simple_queue_and_pipe():
    x = ember.zeros(3)
    queue = FORK.SimpleQueue()
    queue.put(x)
    got = queue.get()  # the same process: found in the cache, no copy
    assert got._storage is x._storage
    left, right = FORK.Pipe()
    left.send(x)
    assert right.recv()._storage is x._storage


def test_spawned_process_writes_into_its_argument():
    shared = ember.zeros(2)
    mp.spawn(children.fill_rank, args=(shared,), nprocs=2)
    assert shared.tolist() == [1.0, 2.0]


def test_dead_sender_is_a_clear_error():
    """With descriptors, the sender must outlive the message (as in PyTorch): say so."""
    queue = FORK.Queue()
    child = FORK.Process(target=_put_and_exit, args=(queue,))
    child.start()
    child.join(120)
    assert child.exitcode == 0  # gone before its message is read
    with pytest.raises(RuntimeError, match=r"exited before it was received.*file_system"):
        queue.get(timeout=120)


def _put_and_exit(queue) -> None:
    queue.put(ember.ones(2))
    queue.close()
    queue.join_thread()


def test_xpu_tensors_are_copied_with_a_warning():
    if not ember.xpu.is_available():
        pytest.skip("no xpu device")
    x = ember.arange(3.0, device="xpu")
    pickler = stdlib_mp.reduction.ForkingPickler  # in this process: OpenCL does not survive fork
    with pytest.warns(UserWarning, match=r"xpu tensors cannot be shared.*gets a copy"):
        got = pickler.loads(pickler.dumps(x))
    assert got.device == x.device and got.tolist() == [0.0, 1.0, 2.0]
    got.add_(1)
    assert x.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("strategy", ["file_system"], indirect=True)
def test_file_system_names_go_when_the_last_user_lets_go(strategy):
    x = ember.ones(5)
    got = round_trip(x)
    assert got._storage is x._storage
    name = x._storage.owner.name
    assert os.path.exists(f"/dev/shm{name}")
    del x, got
    assert not os.path.exists(f"/dev/shm{name}")


def test_file_descriptor_sharing_names_nothing():
    x = ember.ones(5)
    before = set(os.listdir("/dev/shm"))
    pids = [os.getpid()]
    round_trip(x, pids)
    assert x.is_shared() and x._storage.owner.name is None
    # Other processes of the machine make names meanwhile; ours carry our pids.
    new = set(os.listdir("/dev/shm")) - before
    assert [name for name in new if any(f"_{pid}_" in name for pid in pids)] == []


def test_reductions_are_registered_for_every_tensor_class():
    table = stdlib_mp.reduction.ForkingPickler._extra_reducers
    for cls in (ember.Tensor, ember.nn.Parameter, ember.nn.Buffer):
        assert table[cls] is reductions.reduce_tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stdlib_mp.reduction.ForkingPickler.loads(
            stdlib_mp.reduction.ForkingPickler.dumps(ember.ones(2))
        ).tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "name, pickler", [("ember", "pickle"), ("torch", "pickle"), ("ember", "ForkingPickler")]
)
def test_attributes_travel_and_autograd_state_does_not(name, pickler):
    """After backward a leaf holds autograd's links and hooks (weak references): pickling
    carries its Python attributes only, as PyTorch's pickle does (a model trained, then sent).
    Through queues PyTorch drops the attributes too; ember keeps them, as pickle does."""
    import pickle

    m, _ = LIBS[name]
    t = m.ones(2, requires_grad=True)
    t.note, t._private = "kept", 2
    t.register_hook(lambda g: g)
    t.retain_grad()
    (t * 2).sum().backward()
    forking = stdlib_mp.reduction.ForkingPickler
    dumps, loads = (
        (pickle.dumps, pickle.loads) if pickler == "pickle" else (forking.dumps, forking.loads)
    )
    with pytest.warns(UserWarning, match="backward hook .* will not be serialized"):
        got = loads(dumps(t))
    assert got.__dict__ == {"note": "kept", "_private": 2}
    assert got.requires_grad and got.tolist() == [1.0, 1.0]


def test_shared_storage_is_not_resizable():
    """Other processes map exactly its bytes (PyTorch crashes here; ember says why)."""
    x = ember.zeros(2).share_memory_()
    with pytest.raises(RuntimeError, match="not resizable"):
        x.resize_(10)
    x.resize_(1)  # shrinking keeps the storage
    assert x.tolist() == [0.0]
