"""Rank program for the failure tests: ``failures.py <scenario>``."""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import ember
import ember.distributed as dist

scenario = sys.argv[1]
if scenario == "direct_mpi":  # ranks the MPI launcher did not start cannot form an MPI world
    dist.init_process_group("mpi")
if scenario.startswith("direct"):
    rank = int(os.environ["RANK"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    if rank == 1 and (scenario == "direct_raise" or attempt == 0):
        raise RuntimeError(f"rank 1 fails on attempt {attempt}")
    if scenario == "direct_raise":
        time.sleep(600)  # the launcher must stop this rank when rank 1 fails
    print(f"rank {rank} finished attempt {attempt}")
    sys.exit(0)

# Short for the scenarios that wait for it; long elsewhere, so a loaded machine's lag cannot
# make a peer's timeout the first failure instead of the one the scenario causes.
seconds = 3 if scenario.startswith("hang") else 60
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=seconds))
rank = dist.get_rank()
dist.barrier()  # the communicator exists: what times out below is the collective itself
if rank == 1 and scenario == "raise":
    raise ValueError("rank 1 fails on purpose")
if rank == 1 and scenario == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if rank == 1 and scenario in ("hang", "hang_large"):
    time.sleep(600)
if scenario == "hang_large":  # the MPI backend's worker-thread path times out the same way
    dist.all_reduce(ember.ones(1_000_000))
if scenario == "monitored":
    if rank == 2:
        time.sleep(6)
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=2), wait_all_ranks=True)
if scenario == "mismatch":
    dist.all_reduce(ember.ones(2 + rank))
dist.all_reduce(ember.ones(4))
print(f"rank {rank} passed the collective")
