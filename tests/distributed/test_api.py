"""ember.distributed's core in one process, over an in-memory backend: the API's names,
errors and defaults against torch.distributed, staging of tensors, work handles, timeouts."""

from __future__ import annotations

import datetime
import time

import numpy as np
import pytest
import torch.distributed as tdist

import ember
import ember.distributed as dist

from .loopback import LoopbackPlugin


@pytest.fixture
def loopback(backends):
    plugin = LoopbackPlugin()
    backends({"loopback": plugin})
    dist.init_process_group("loopback", rank=0, world_size=1)
    return plugin


def test_reduce_op_and_backend_like_torch():
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"):
        ours, theirs = getattr(dist.ReduceOp, name), getattr(tdist.ReduceOp, name)
        assert int(ours) == int(theirs)
        assert repr(ours) == repr(theirs)
        assert str(ours) == str(theirs)
    assert dist.Backend("MPI") == "mpi" == tdist.Backend("MPI")
    assert dist.default_pg_timeout == tdist.default_pg_timeout


def test_uninitialized_errors_like_torch(backends):
    backends({"loopback": LoopbackPlugin()})
    assert not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, lambda: dist.all_reduce(ember.ones(1))):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_init_state_and_destroy(loopback):
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "loopback")
    assert dist.group.WORLD is dist.GroupMember.WORLD is not None
    with pytest.raises(ValueError, match="initialize the default process group twice"):
        dist.init_process_group("loopback", rank=0, world_size=1)
    dist.all_reduce(ember.ones(2))
    comm = loopback.created[0]
    assert comm.options["global_ranks"] == [0]
    assert comm.options["timeout"] == dist.default_pg_timeout.total_seconds()
    assert comm.options["store"] is None  # the backend needs none
    dist.destroy_process_group()
    assert comm.closed and not dist.is_initialized()


def test_unknown_and_broken_backends(backends):
    class Broken:
        @staticmethod
        def ember_collective_backend_info():
            raise ImportError("libfoo.so.1: cannot open shared object file")

    import pluggy

    Broken.ember_collective_backend_info = pluggy.HookimplMarker("ember")(
        Broken.ember_collective_backend_info
    )
    backends({"loopback": LoopbackPlugin(), "foo": Broken})
    with pytest.raises(ValueError, match="no Gloo engine"):
        dist.init_process_group("gloo", rank=0, world_size=1)
    with pytest.raises(ValueError, match=r"Invalid backend: 'bar'.*available: foo, loopback"):
        dist.init_process_group("bar", rank=0, world_size=1)
    with pytest.raises(RuntimeError, match=r"'foo' collective backend cannot be used.*libfoo"):
        dist.init_process_group("foo", rank=0, world_size=1)


def test_env_rendezvous_needs_rank(backends, monkeypatch):
    backends({"loopback": LoopbackPlugin()})
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(ValueError, match="environment variable RANK expected, but not set"):
        dist.init_process_group("loopback")
    monkeypatch.setenv("RANK", "0")
    dist.init_process_group("loopback")
    assert dist.get_world_size() == 1
    with pytest.raises(TypeError, match=r"datetime.timedelta"):
        dist.destroy_process_group() or dist.init_process_group("loopback", timeout=5)


def test_results_land_in_any_tensor(loopback):
    """Contiguous CPU tensors are reduced in place; other layouts through a staging copy."""
    base = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    view = base.t()
    assert not view.is_contiguous()
    dist.all_reduce(view)
    np.testing.assert_array_equal(base.numpy(), 2 * np.arange(12).reshape(3, 4))
    leaf = ember.ones(3, requires_grad=True)  # PyTorch reduces parameters in place too
    dist.all_reduce(leaf)
    np.testing.assert_array_equal(leaf.detach().numpy(), [2, 2, 2])


def test_async_work_handle(loopback):
    t = ember.ones(4)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.is_completed() and work.wait() and work.is_success()
    assert work.result()[0] is t and work.exception() is None
    np.testing.assert_array_equal(t.numpy(), [2, 2, 2, 2])
    assert dist.all_reduce(ember.ones(1)) is None


def test_timeout_raises_and_breaks_the_group(backends):
    plugin = LoopbackPlugin()
    backends({"loopback": plugin})
    dist.init_process_group(
        "loopback", rank=0, world_size=1, timeout=datetime.timedelta(seconds=0.3)
    )
    plugin.hang = True
    start = time.monotonic()
    with pytest.raises(dist.DistBackendError, match=r"collective operation timeout.*ALL_REDUCE"):
        dist.all_reduce(ember.ones(2))
    assert time.monotonic() - start < 5
    plugin.hang = False
    with pytest.raises(dist.DistBackendError, match="unusable after an earlier failure"):
        dist.all_reduce(ember.ones(2))


def test_backend_failure_is_a_dist_backend_error(loopback):
    loopback.fail = True
    work = dist.broadcast(ember.ones(2), src=0, async_op=True)
    with pytest.raises(dist.DistBackendError, match=r"BROADCAST.*loopback transport lost"):
        work.wait()
    assert isinstance(work.exception(), dist.DistBackendError)


def test_backend_failing_to_start_is_a_dist_backend_error(loopback):
    loopback.fail_start = True
    with pytest.raises(dist.DistBackendError, match="all_reduce on default_pg failed to start"):
        dist.all_reduce(ember.ones(2))


def test_argument_checks_like_torch(loopback):
    x = ember.ones(2)
    with pytest.raises(TypeError, match=r"Expected parameter `tensor` of type ember.Tensor"):
        dist.all_reduce(np.ones(2))
    with pytest.raises(ValueError, match="needs one tensor per rank"):
        dist.all_gather([x, x], x)
    with pytest.raises(ValueError, match="world_size \\(1\\) times the elements"):
        dist.all_gather_into_tensor(ember.ones(3), x)
    with pytest.raises(ValueError, match="not part of the group"):
        dist.broadcast(x, src=3)
    with pytest.raises(ValueError, match="should not be the same as the rank of the current"):
        dist.send(x, dst=0)
    with pytest.raises(ValueError, match="PREMUL_SUM"):
        dist.all_reduce(x, op=dist.ReduceOp.PREMUL_SUM)
    with pytest.raises(ValueError, match=r"not divisible by the group size|split_sizes"):
        dist.all_to_all_single(ember.ones(3), ember.ones(3), [1], [2])


def test_collectives_on_one_rank(loopback):
    x = ember.arange(6, dtype=ember.int64).reshape(2, 3)
    out = [ember.zeros(2, 3, dtype=ember.int64)]
    dist.all_gather(out, x)
    np.testing.assert_array_equal(out[0].numpy(), x.numpy())
    flat = ember.zeros(6, dtype=ember.int64)
    dist.all_gather_into_tensor(flat, x)
    np.testing.assert_array_equal(flat.numpy(), np.arange(6))
    gathered = [ember.zeros(2, 3, dtype=ember.int64)]
    dist.gather(x, gathered, dst=0)
    np.testing.assert_array_equal(gathered[0].numpy(), x.numpy())
    received = ember.zeros(2, 3, dtype=ember.int64)
    dist.scatter(received, [x], src=0)
    np.testing.assert_array_equal(received.numpy(), x.numpy())
    rows = ember.zeros(2, 3, dtype=ember.int64)
    dist.all_to_all_single(rows, x)
    assert ("counts", [6], [6]) in loopback.created[0].calls
    objects = [None]
    dist.all_gather_object(objects, {"a": 1})
    assert objects == [{"a": 1}]
    dist.barrier()


def test_no_backend_for_a_device_type(backends):
    backends({"loopback": LoopbackPlugin(device_types=["xpu"])})
    dist.init_process_group("loopback", rank=0, world_size=1)
    with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
        dist.all_reduce(ember.ones(1))


def test_store_backends_get_a_prefixed_store(backends):
    plugin = LoopbackPlugin(needs_store=True)
    backends({"loopback": plugin})
    server = dist.TCPStore("127.0.0.1", 0, is_master=True)
    try:
        dist.init_process_group("loopback", rank=0, world_size=1, store=server)
        dist.all_reduce(ember.ones(1))
        store = plugin.created[0].options["store"]
        store.set("id", b"xyz")
        assert server.get("default_pg/cpu/id") == b"xyz"
    finally:
        dist.destroy_process_group()
        server.close()


def test_builtin_backends_are_registered():
    from ember.distributed._registry import Registry

    records = Registry().records()
    assert records["mpi"].info["device_types"] == ["cpu", "xpu"]
    assert records["nccl"].info["device_types"] == ["cuda"]
