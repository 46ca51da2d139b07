"""Rank program: collectives over the process groups of DeviceMeshes on 4 ranks, and DDP over
a mesh dimension. Each all-reduce sums 2**rank, so its result names the ranks that took part;
each rank saves what it saw to ``<out>/rank<r>.json``."""

from __future__ import annotations

import json
import sys

import ember
import ember.distributed as dist
from ember import nn
from ember.distributed.device_mesh import DeviceMesh, init_device_mesh

dist.init_process_group("mpi")
RANK = dist.get_rank()
SEEN: dict = {}


def members(group) -> int:
    """The bit mask of the ranks of ``group``, found by an all-reduce over it."""
    t = ember.tensor([2**RANK], dtype=ember.int64)
    dist.all_reduce(t, group=group)
    return int(t.item())


def record(key: str, mesh) -> None:
    SEEN[key] = {
        "mesh": mesh.mesh.tolist(),
        "coordinate": mesh.get_coordinate(),
        "groups": [members(g) for g in mesh.get_all_groups()],
        "local": [mesh.get_local_rank(d) for d in range(mesh.ndim)],
    }


record("1d", init_device_mesh("cpu", (4,)))
mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"), backend_override={1: "mpi"})
record("2d", mesh)
SEEN["2d_by_name"] = [members(mesh.get_group("dp")), members(mesh.get_group("tp"))]
record("dp", mesh["dp"])
record("tp", mesh["tp"])
record("dp_tp", mesh["dp", "tp"])
record("flat", mesh._flatten())
record("permuted", DeviceMesh("cpu", [[3, 1], [2, 0]], mesh_dim_names=("a", "b")))
half = init_device_mesh("cpu", (2,))
SEEN["half"] = {"coordinate": half.get_coordinate()}
if half.get_coordinate() is not None:
    SEEN["half"]["group"] = members(half.get_group())

ember.manual_seed(RANK)
net = nn.Linear(2, 1, bias=False).double()
SEEN["ddp_initial"] = net.weight.detach().tolist()
ddp = nn.parallel.DistributedDataParallel(net, device_mesh=mesh["dp"])
SEEN["ddp_synced"] = net.weight.detach().tolist()
ddp(ember.ones(1, 2, dtype=ember.float64) * (RANK + 1)).sum().backward()
SEEN["ddp_grad"] = net.weight.grad.tolist()
with open(f"{sys.argv[1]}/rank{RANK}.json", "w") as f:
    json.dump(SEEN, f)
