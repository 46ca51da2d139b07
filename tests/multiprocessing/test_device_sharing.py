"""CUDA tensors between processes through inter-process memory handles, on the CUDA emulator
(ember_backend_gpu/emulator.py: each allocation is a memfd the importer opens, as the driver's
IPC maps the exporter's memory). What runs here is the glue a GPU runs too: the handle of the
caching allocator's segment plus the storage's offset in it, one opening per handle, a tensor
coming home as its own storage; the driver calls themselves need a GPU."""

from __future__ import annotations

import sys
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember.dispatcher.devices import REGISTRY

from . import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="memfds are Linux's")

FORK = mp.get_context("fork")
PICKLER = ForkingPickler


@pytest.fixture(scope="module", autouse=True)
def emulated_cuda():
    patch = pytest.MonkeyPatch()
    patch.setenv("EMBER_CUDA_EMULATOR", "1")
    REGISTRY.reset()
    yield
    patch.undo()
    REGISTRY.reset()


def _child(inbox, outbox) -> None:
    t = inbox.get()
    t.mul_(10)  # a kernel of this process writes the other's memory
    outbox.put((t.device.type, t[2:].clone().cpu().tolist()))
    outbox.put(t[1:])  # a view goes back: home, it is the sender's own storage
    inbox.get()


def test_the_emulator_offers_ipc_handles():
    runtime = ember.ones(1, device="cuda")._storage.runtime
    assert hasattr(runtime, "ipc_handle") and hasattr(runtime, "open_ipc_handle")


def test_a_child_writes_a_cuda_tensor_in_place():
    x = ember.arange(6.0, device="cuda")[1:]  # an offset into an allocator segment
    assert x.is_shared() and x.share_memory_() is x  # CUDA memory: shared already
    inbox, outbox, child = children.start(FORK, _child)
    try:
        inbox.put(x)
        device, seen = outbox.get(timeout=120)
        back = outbox.get(timeout=120)
    finally:
        inbox.put(None)
        child.join(120)
    assert child.exitcode == 0 and device == "cuda"
    assert seen == [30.0, 40.0, 50.0]
    assert x.cpu().tolist() == [10.0, 20.0, 30.0, 40.0, 50.0]
    assert back._storage is x._storage and back.cpu().tolist() == [20.0, 30.0, 40.0, 50.0]


def test_opened_handles_are_shared_and_identity_kept_in_one_process():
    x = ember.randn(4, 3, device="cuda")
    a, b = PICKLER.loads(PICKLER.dumps((x, x.t())))
    assert a._storage is x._storage and b._storage is x._storage
    np.testing.assert_array_equal(b.cpu().numpy(), x.cpu().numpy().T)


def test_parameters_and_grad_flags_cross_on_the_device():
    p = ember.nn.Parameter(ember.randn(3, device="cuda"))
    got = PICKLER.loads(PICKLER.dumps(p))
    assert type(got) is ember.nn.Parameter and got.requires_grad and got.device == p.device


def test_a_handle_of_a_dead_process_is_a_clear_error():
    runtime = ember.ones(1, device="cuda")._storage.runtime
    handle = runtime.ipc_handle(runtime.alloc(16), 0)
    dead = (2**22 + 12345).to_bytes(8, "little") + handle[8:]  # no such pid
    with pytest.raises(RuntimeError, match="cannot open the IPC handle of process"):
        runtime.open_ipc_handle(dead, 0)


def test_queued_work_is_finished_before_a_handle_leaves(monkeypatch):
    """The receiver must read what the sender's kernels wrote, not what they will write."""
    x = ember.ones(8, device="cuda") * 3
    runtime = x._storage.runtime
    calls = []
    real = runtime.synchronize
    monkeypatch.setattr(runtime, "synchronize", lambda index=None: (calls.append(index), real()))
    PICKLER.dumps(x)
    assert calls == [0]
