"""DDP's reducer in one process over the in-memory backend: bucket layout and order, buckets
all-reduced during backward (not after it), the rebuild in readiness order, no_sync."""

from __future__ import annotations

import pytest

import ember
import ember.distributed as dist
from ember import nn

from .loopback import Loopback, LoopbackPlugin

TINY_MB = 1e-6  # every parameter fills a bucket


@pytest.fixture
def log(backends, monkeypatch):
    backends({"loopback": LoopbackPlugin()})
    dist.init_process_group("loopback", rank=0, world_size=1)
    events: list = []
    all_reduce = Loopback.all_reduce

    def logged(self, buf, op):
        events.append(f"all_reduce:{buf.size}")
        return all_reduce(self, buf, op)

    monkeypatch.setattr(Loopback, "all_reduce", logged)
    return events


def _model(events):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2), nn.Linear(2, 1))
    for i, p in enumerate(model.parameters()):
        p.register_post_accumulate_grad_hook(lambda _p, i=i: events.append(f"ready:{i}"))
    return model


def test_buckets_reduce_during_backward_in_reverse_order(log):
    ddp = nn.parallel.DistributedDataParallel(
        _model(log), bucket_cap_mb=TINY_MB, find_unused_parameters=True
    )
    assert [b.indices for b in ddp.reducer.buckets] == [[5], [4], [3], [2], [1], [0]]
    log.clear()
    ddp(ember.ones(2, 4)).sum().backward()
    first_reduce = log.index("all_reduce:1")  # bucket 0: the last bias, one element
    assert first_reduce < log.index("ready:0"), log  # launched before backward reached layer 0
    assert [e for e in log if e.startswith("all_reduce")] == [
        "all_reduce:1",
        "all_reduce:2",
        "all_reduce:2",
        "all_reduce:6",
        "all_reduce:3",
        "all_reduce:12",
        "all_reduce:6",
    ]  # fmt: skip  (the last one: the used-parameter map, find_unused_parameters)


def test_first_iteration_one_bucket_then_rebuilt_in_readiness_order(log):
    ddp = nn.parallel.DistributedDataParallel(_model(log), bucket_cap_mb=TINY_MB)
    assert [b.indices for b in ddp.reducer.buckets] == [[0, 1, 2, 3, 4, 5]]
    ddp(ember.ones(2, 4)).sum().backward()
    ready = [int(e.split(":")[1]) for e in log if e.startswith("ready")]
    ddp(ember.ones(2, 4))  # the rebuild happens before the next forward
    assert [b.indices for b in ddp.reducer.buckets] == [[i] for i in ready]


def test_no_sync_skips_the_reduction(log):
    ddp = nn.parallel.DistributedDataParallel(_model(log))
    log.clear()
    with ddp.no_sync():
        ddp(ember.ones(2, 4)).sum().backward()
    assert not [e for e in log if e.startswith("all_reduce")]
    grads = [p.grad.numpy().copy() for p in ddp.parameters()]
    ddp(ember.ones(2, 4)).sum().backward()  # synced: all-reduces the accumulated gradients
    assert [e for e in log if e.startswith("all_reduce")] == ["all_reduce:26"]
    for p, g in zip(ddp.parameters(), grads):
        # two backward passes accumulated, then the loopback "sum" of one rank with itself
        assert (p.grad.numpy() == 4 * g).all()
