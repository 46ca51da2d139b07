"""Functions the tests run in child processes (module level, so spawned children import them).

Each takes the library under test (``ember`` or ``torch``, by name) where the test compares
with PyTorch, so one body exercises both."""

from __future__ import annotations

import importlib
import os
import signal
import time

# Siblings of a failing process sleep this long: stopping them must take far less.
SIBLING_SLEEP = 600


def lib(name: str):
    return importlib.import_module(name)


def start(ctx, target, *extra, daemon=None):
    """A child of ``ctx`` running ``target(inbox, outbox, *extra)``, and those two queues."""
    inbox, outbox = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=target, args=(inbox, outbox, *extra), daemon=daemon)
    child.start()
    return inbox, outbox, child


def add_one_and_send_back(inbox, outbox) -> None:
    t = inbox.get()
    t.add_(1)
    outbox.put(t[1:])  # a view of what arrived: the same memory, one storage
    outbox.put(("done", os.getpid()))
    inbox.get()  # stay alive until the parent has read (file descriptors travel from here)


def echo(inbox, outbox) -> None:
    """Send back everything until None (the sender stays alive while its messages are read)."""
    while (item := inbox.get()) is not None:
        outbox.put(item)


def square(t):
    return t * t


def fill_rank(rank: int, shared) -> None:
    shared[rank] = rank + 1


def raise_value_error(rank: int, bad: int) -> None:
    if rank == bad:
        raise ValueError(f"rank {rank} refuses")
    time.sleep(0.2)


def exit_with(rank: int, bad: int, code: int) -> None:
    if rank == bad:
        os._exit(code)
    time.sleep(SIBLING_SLEEP)  # the parent stops the others long before


def kill_self(rank: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def hogwild(rank: int, name: str, model, x, y, steps: int, counter) -> None:
    """Train the shared ``model`` on this rank's slice of (x, y) with plain SGD, as PyTorch's
    mnist_hogwild example does: each process has its own optimizer over the shared weights."""
    m = lib(name)
    m.manual_seed(rank)
    optimizer = m.optim.SGD(model.parameters(), lr=0.05)
    part = slice(rank, None, 2)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((model(x[part]) - y[part]) ** 2).mean()
        loss.backward()
        optimizer.step()
        with m.no_grad():
            counter[rank].add_(1)  # its own slot: concurrent read-modify-writes would race


KEPT: list = []


def keep_until_exit(inbox, done) -> None:
    """Hold a received tensor in a global: only the exit gives its reference back."""
    KEPT.append(inbox.get())
    done.put(os.getpid())


def drop_inherited_and_receive(inbox, done, inherited) -> None:
    """A forked child drops its copy of the parent's shared tensor (it holds no reference of
    its own) and holds a received one until exit."""
    import gc

    inherited.clear()
    gc.collect()
    KEPT.append(inbox.get())
    done.put(os.getpid())


BOARD: list = []


def keep_board(board) -> None:
    """A pool initializer: every task of this worker writes into ``board``."""
    BOARD.append(board)


def mark(i: int, t):
    BOARD[0][i] = i + 1
    return t * t


def descriptors_in_flight(report) -> None:
    """What ``_inflight`` counts in a fresh process (a fork starts with nothing in flight):
    one descriptor sent, then collected (here, by this process itself)."""
    from ember.multiprocessing import _inflight

    seen = [_inflight.pending()]
    fd = os.memfd_create("in-flight")
    handle = _inflight.SharedFd(fd)
    seen += [_inflight.pending(), _inflight.wait_for_receivers(timeout=0.05)]
    os.close(handle.detach())
    seen.append(_inflight.wait_for_receivers(timeout=120))  # the sharer closes just after
    seen.append(_inflight.pending())
    os.close(fd)
    report.put(seen)
