"""Rank program: every collective on every dtype; each rank saves what it got (numpy arrays,
and the type of each error raised) to ``<out>/rank<r>.npz`` and ``.json`` for the test."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np

import ember
import ember.distributed as dist
from tests.distributed.cases import DTYPES, REDUCE_OPS, SHAPE, split_rows, value

dist.init_process_group("mpi")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
OUT: dict = {}
ERRORS: dict = {}


def tensor(rank, dtype, salt, shape=SHAPE):
    return ember.from_numpy(value(rank, dtype, salt, shape).copy())


def record(key, fn):
    try:
        result = fn()
    except Exception as exc:
        ERRORS[key] = type(exc).__name__
        return
    for i, t in enumerate(result if isinstance(result, list) else [result]):
        OUT[f"{key}#{i}"] = t.numpy().copy()


def reductions(dtype):
    for op in REDUCE_OPS:

        def run(op=op):
            t = tensor(RANK, dtype, f"all_reduce/{op}")
            dist.all_reduce(t, op=getattr(dist.ReduceOp, op.upper()))
            return t

        record(f"all_reduce/{op}/{dtype}", run)

    def reduce_to_2():
        t = tensor(RANK, dtype, "reduce")
        dist.reduce(t, dst=2, op=dist.ReduceOp.SUM)
        return t

    record(f"reduce/{dtype}", reduce_to_2)


def movement(dtype):
    def broadcast():
        t = tensor(RANK, dtype, "broadcast")
        dist.broadcast(t, src=1)
        return t

    def all_gather():
        out = [ember.zeros(SHAPE, dtype=getattr(ember, dtype)) for _ in range(WORLD)]
        dist.all_gather(out, tensor(RANK, dtype, "gather"))
        return out

    def all_gather_into_tensor():
        out = ember.zeros(WORLD * SHAPE[0], SHAPE[1], dtype=getattr(ember, dtype))
        dist.all_gather_into_tensor(out, tensor(RANK, dtype, "gather"))
        return out

    def gather():
        out = [ember.zeros(SHAPE, dtype=getattr(ember, dtype)) for _ in range(WORLD)]
        dist.gather(tensor(RANK, dtype, "gather"), out if RANK == 0 else None, dst=0)
        return out if RANK == 0 else []

    def scatter():
        out = ember.zeros(SHAPE, dtype=getattr(ember, dtype))
        chunks = [tensor(100 + j, dtype, "scatter") for j in range(WORLD)]
        dist.scatter(out, chunks if RANK == 1 else None, src=1)
        return out

    for name, fn in list(locals().items()):
        if callable(fn):
            record(f"{name}/{dtype}", fn)


def scatters(dtype):
    def reduce_scatter():
        out = ember.zeros(SHAPE, dtype=getattr(ember, dtype))
        inputs = [tensor(RANK * 10 + j, dtype, "reduce_scatter") for j in range(WORLD)]
        dist.reduce_scatter(out, inputs, op=dist.ReduceOp.SUM)
        return out

    def reduce_scatter_tensor():
        out = ember.zeros(SHAPE, dtype=getattr(ember, dtype))
        rows = [value(RANK * 10 + j, dtype, "reduce_scatter") for j in range(WORLD)]
        dist.reduce_scatter_tensor(out, ember.from_numpy(np.concatenate(rows)))
        return out

    def all_to_all_single():
        send = [np.full((split_rows(RANK, j), 2), RANK * 10 + j) for j in range(WORLD)]
        recv_rows = sum(split_rows(j, RANK) for j in range(WORLD))
        out = ember.zeros(recv_rows, 2, dtype=getattr(ember, dtype))
        source = ember.from_numpy(np.concatenate(send).astype(value(0, dtype, "x").dtype))
        dist.all_to_all_single(
            out, source, [split_rows(j, RANK) for j in range(WORLD)],
            [split_rows(RANK, j) for j in range(WORLD)],
        )  # fmt: skip
        return out

    def all_to_all():
        inputs = [tensor(RANK * 10 + j, dtype, "all_to_all") for j in range(WORLD)]
        out = [ember.zeros(SHAPE, dtype=getattr(ember, dtype)) for _ in range(WORLD)]
        dist.all_to_all(out, inputs)
        return out

    for name, fn in list(locals().items()):
        if callable(fn):
            record(f"{name}/{dtype}", fn)


def point_to_point(dtype):
    def ring():
        out = ember.zeros(SHAPE, dtype=getattr(ember, dtype))
        send = dist.isend(tensor(RANK, dtype, "ring"), dst=(RANK + 1) % WORLD, tag=7)
        recv = dist.irecv(out, src=(RANK - 1) % WORLD, tag=7)
        send.wait()
        recv.wait()
        return out

    def batched():
        out = ember.zeros(SHAPE, dtype=getattr(ember, dtype))
        ops = [
            dist.P2POp(dist.irecv, out, (RANK + 1) % WORLD, tag=9),
            dist.P2POp(dist.isend, tensor(RANK, dtype, "ring"), (RANK - 1) % WORLD, tag=9),
        ]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        return out

    record(f"ring/{dtype}", ring)
    record(f"batched/{dtype}", batched)


def groups_and_objects():
    sub = dist.new_group([0, 2])
    t = ember.full((2,), float(RANK + 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        returned = dist.all_reduce(t, group=sub)
    OUT["group/all_reduce#0"] = t.numpy()
    OUT["group/rank#0"] = np.array([dist.get_rank(sub), dist.get_world_size(sub)])
    OUT["group/warned#0"] = np.array([len(caught), returned is None])
    b = ember.full((1,), float(RANK))
    dist.broadcast(b, group=sub, group_src=1)  # group rank 1 is world rank 2
    OUT["group/broadcast#0"] = b.numpy()
    objects = [None] * WORLD
    dist.all_gather_object(objects, {"rank": RANK, "name": "r" * RANK})
    listed = [f"from {RANK}", RANK] if RANK == 1 else [None, None]
    dist.broadcast_object_list(listed, src=1)
    gathered = [None] * WORLD if RANK == 2 else None
    dist.gather_object(("g", RANK), gathered, dst=2)
    mine = [None]
    dist.scatter_object_list(mine, [{"to": j} for j in range(WORLD)] if RANK == 0 else None, src=0)
    anyone = ember.zeros(1)
    if RANK == 0:
        senders = sorted(dist.recv(anyone, src=None, tag=3) for _ in range(WORLD - 1))
    else:
        dist.send(ember.full((1,), float(RANK)), dst=0, tag=3)
        senders = []
    OBJECTS.update(
        all_gather=objects, broadcast=listed, gather=gathered, scatter=mine, senders=senders
    )


def async_and_barriers():
    t = ember.ones(1000)
    work = dist.all_reduce(t, async_op=True)
    while not work.is_completed():
        pass
    OBJECTS["async"] = [work.wait(), work.is_success()]
    OUT["async#0"] = work.result()[0].numpy()
    dist.barrier()
    dist.monitored_barrier()
    strided = ember.arange(12, dtype=ember.float32).reshape(3, 4).t()
    dist.all_reduce(strided)
    OUT["strided#0"] = strided.numpy()
    if ember.xpu.is_available():
        x = ember.ones(5, device="xpu") * (RANK + 1)
        dist.all_reduce(x)
        OUT["xpu#0"] = x.cpu().numpy()
    else:
        OBJECTS["xpu_skip"] = ember.xpu.unavailable_reason()


def large():
    """Messages past the MPI backend's thread threshold (its blocking calls on a worker
    thread), and a small collective started while a large one is in flight."""
    n = 300_000  # 1.2 MB of float32
    big = ember.full((n,), float(RANK + 1))
    work = dist.all_reduce(big, async_op=True)
    small = ember.ones(3)
    dist.all_reduce(small)  # must queue behind the large one on every rank
    work.wait()
    OUT["large/all_reduce#0"] = big.numpy()[[0, n - 1]]
    OUT["large/small#0"] = small.numpy()
    b = ember.full((n,), float(RANK))
    dist.broadcast(b, src=2)
    OUT["large/broadcast#0"] = b.numpy()[[0, n - 1]]
    gathered = ember.zeros(WORLD * n)
    dist.all_gather_into_tensor(gathered, ember.full((n,), float(RANK)))
    OUT["large/all_gather#0"] = gathered.numpy()[[0, n, 2 * n, 3 * n - 1]]
    half = ember.full((n,), 0.5, dtype=ember.bfloat16)
    dist.all_reduce(half, op=dist.ReduceOp.AVG)
    OUT["large/avg_bf16#0"] = half.float().numpy()[[0, n - 1]]


OBJECTS: dict = {}
large()
for dtype in DTYPES:
    reductions(dtype)
    movement(dtype)
    scatters(dtype)
    point_to_point(dtype)
groups_and_objects()
async_and_barriers()
out = sys.argv[1]
np.savez(f"{out}/rank{RANK}.npz", **OUT)
with open(f"{out}/rank{RANK}.json", "w") as f:
    json.dump({"errors": ERRORS, "objects": OBJECTS}, f, default=repr)
dist.destroy_process_group()
