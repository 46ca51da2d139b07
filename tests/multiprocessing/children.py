"""Functions the tests run in child processes (module level, so spawned children import them).

Each takes the library under test (``ember`` or ``torch``, by name) where the test compares
with PyTorch, so one body exercises both."""

from __future__ import annotations

import importlib
import os
import signal
import time


def lib(name: str):
    return importlib.import_module(name)


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


def receive_then_wait(inbox, ready, hold) -> None:
    """Receive a tensor, write into it, say so, then wait (to be killed)."""
    t = inbox.get()
    t.fill_(7)
    hold.append(t)
    ready.put(os.getpid())
    time.sleep(60)


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
    time.sleep(60)  # the parent stops the others


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
