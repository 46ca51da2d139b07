"""Programs the leak tests run as their own process trees (``python -m
tests.multiprocessing.leak_jobs NAME``), so that the tests can look at /dev/shm after every
process of the tree has exited. Each prints one JSON line of what it saw."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import time

import ember
import ember.multiprocessing as mp
from ember.utils.data import DataLoader, Dataset

from . import children

FORK = mp.get_context("fork")


def _receive_and_wait(inbox, ready) -> None:
    t = inbox.get()
    t.fill_(7)
    ready.put(os.getpid())
    time.sleep(600)  # killed before this ends


def memfds() -> tuple[int, int]:
    """This process's descriptors and mappings of ember's anonymous segments."""
    fds = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            fds += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:ember-shm")
    with open("/proc/self/maps") as maps:
        return fds, sum("/memfd:ember-shm" in line for line in maps)


def killed_receiver() -> dict:
    """A child maps a shared tensor, writes it, and is killed while holding it."""
    before = memfds()
    inbox, ready, child = children.start(FORK, _receive_and_wait, daemon=True)
    x = ember.zeros(1 << 16)
    inbox.put(x)
    ready.get(timeout=120)
    os.kill(child.pid, signal.SIGKILL)
    child.join(120)
    seen = {"child_exitcode": child.exitcode, "written": x[0].item()}
    seen["name"] = x._storage.owner.name
    seen["while_held"] = memfds()
    del x
    gc.collect()
    if seen["name"]:
        seen["name_after_drop"] = os.path.exists(f"/dev/shm{seen['name']}")
    deadline = time.monotonic() + 60  # the descriptor-sharing thread closes its copy just after
    while memfds() != before and time.monotonic() < deadline:
        time.sleep(0.05)
    seen["left"] = [now - then for now, then in zip(memfds(), before)]
    return seen


class _Images(Dataset):
    def __len__(self):
        return 2048

    def __getitem__(self, i):
        time.sleep(0.002)
        return ember.full((3, 32, 32), float(i))


def killed_loader_worker() -> dict:
    """A DataLoader worker is killed mid-epoch: the loader reports it and frees what it got."""
    loader = DataLoader(_Images(), batch_size=8, num_workers=2, multiprocessing_context="fork")
    iterator = iter(loader)
    next(iterator)
    os.kill(iterator._workers[0].pid, signal.SIGKILL)
    try:
        for _ in iterator:
            pass
    except RuntimeError as error:
        return {"error": str(error)}
    return {"error": None}


def main() -> None:
    name, strategy = sys.argv[1], sys.argv[2]
    mp.set_sharing_strategy(strategy)
    seen = globals()[name]()
    seen["pid"] = os.getpid()
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    main()
