"""Rank program: every DDP training variant of ddp_cases; saves each rank's parameters, and
the checks that need ranks (state-dict keys, the unused-parameter error)."""

from __future__ import annotations

import json
import sys

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from tests.distributed import ddp_cases

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
out = sys.argv[1]
arrays = {}
for kind in ddp_cases.KINDS:
    for key, value in ddp_cases.train(kind, world, rank).items():
        arrays[f"{kind}/{key}"] = value

checks = {}
ddp = nn.parallel.DistributedDataParallel(ddp_cases.model("plain", rank))
checks["keys"] = sorted(ddp.state_dict())
ddp.module.spare.requires_grad_(True)  # an unused parameter without find_unused_parameters
ddp = nn.parallel.DistributedDataParallel(ddp.module)
x = ember.ones(2, 6, dtype=ember.float64)
ddp(x).sum().backward()
try:
    ddp(x).sum().backward()
except RuntimeError as exc:
    checks["unused_error"] = str(exc)
try:  # a different model on rank 1: reported at construction, before any gradient
    nn.parallel.DistributedDataParallel(nn.Linear(3, 2 + rank))
except RuntimeError as exc:
    checks["mismatch_error"] = str(exc)
np.savez(f"{out}/rank{rank}.npz", **arrays)
with open(f"{out}/rank{rank}.json", "w") as f:
    json.dump(checks, f)
