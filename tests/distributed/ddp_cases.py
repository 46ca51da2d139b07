"""DDP training runs, the same code for the ranks (jobs/ddp.py) and for the single-process
reference on the concatenated batch (test_ddp.py): the reference must end with the
parameters every rank ends with."""

from __future__ import annotations

import numpy as np

import ember
from ember import nn

STEPS = 3
ROWS = 4  # rows per rank per micro-batch
KINDS = ["plain", "no_sync", "bucket_view", "unused", "static", "sync_bn"]
DDP_OPTIONS = {
    "plain": {},
    "no_sync": {},
    # a bucket per parameter: several all-reduces in flight, and .grad views into them
    "bucket_view": {"gradient_as_bucket_view": True, "bucket_cap_mb": 1e-6},
    "unused": {"find_unused_parameters": True},
    "static": {"static_graph": True},
    "sync_bn": {},
}


class Net(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        norm = nn.BatchNorm1d(8) if kind == "sync_bn" else nn.Identity()
        self.norm = nn.SyncBatchNorm.convert_sync_batchnorm(norm) if kind == "sync_bn" else norm
        self.fc2 = nn.Linear(8, 2)
        self.spare = nn.Linear(3, 3)  # never used: only find_unused_parameters tolerates it
        self.kind = kind

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)).relu())


def model(kind: str, seed: int):
    ember.manual_seed(seed)
    net = Net(kind).double()
    if kind != "unused":
        net.spare.requires_grad_(False)
    return net


def data(step: int, micro: int, world: int, rank: int | None):
    """Rows of (step, micro-batch): rank ``rank``'s share, or all ranks' (rank None)."""
    rng = np.random.default_rng(1000 * step + micro)
    x, y = rng.standard_normal((world * ROWS, 6)), rng.standard_normal((world * ROWS, 2))
    if rank is not None:
        x, y = x[rank * ROWS : (rank + 1) * ROWS], y[rank * ROWS : (rank + 1) * ROWS]
    return ember.from_numpy(x), ember.from_numpy(y)


def train(kind: str, world: int, rank: int | None = None) -> dict:
    """Train ``STEPS`` steps; ``rank`` None: one process on every rank's rows (the reference).
    Returns the module's state dict as numpy arrays."""
    net = model(kind, seed=0 if rank is None else rank)  # DDP must broadcast rank 0's
    wrapped = net
    if rank is not None:
        wrapped = nn.parallel.DistributedDataParallel(net, **DDP_OPTIONS[kind])
    opt = ember.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.1, momentum=0.5)
    micro_batches = 2 if kind == "no_sync" else 1
    for step in range(STEPS):
        opt.zero_grad()
        for micro in range(micro_batches):
            x, y = data(step, micro, world, rank)
            last = micro == micro_batches - 1
            if rank is not None and not last:
                with wrapped.no_sync():
                    ((wrapped(x) - y) ** 2).mean().backward()
            else:
                ((wrapped(x) - y) ** 2).mean().backward()
        opt.step()
    state = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    state["spare_grad_is_none"] = np.array(net.spare.weight.grad is None)
    return state
