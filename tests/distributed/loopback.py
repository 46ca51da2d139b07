"""An in-memory collective backend for testing ember.distributed's core in one process.

A one-rank "world" whose all-reduce doubles the buffer (as two ranks holding the same tensor
would sum it), so tests see that results land in the tensors; the other collectives copy
send to receive, as they do on one rank. ``hang=True`` gives requests that never finish, for
the timeout path; ``fail=True`` requests that raise, for the error path. Like a real plugin it
never imports ember.
"""

from __future__ import annotations

import numpy as np
import pluggy

hookimpl = pluggy.HookimplMarker("ember")


class Request:
    def __init__(self, action=None, hang=False, fail=False):
        self.action, self.hang, self.fail = action, hang, fail
        self.source = 0
        self.polls = 0

    def test(self) -> bool:
        self.polls += 1
        if self.fail:
            raise OSError("loopback transport lost")
        if self.hang:
            return False
        if self.action is not None:
            self.action()
            self.action = None
        return True

    def wait(self, seconds: float) -> bool:
        if self.hang:
            import time

            time.sleep(seconds)
            return False
        return self.test()


class Loopback:
    def __init__(self, plugin, options):
        self.plugin, self.options = plugin, options
        self.rank, self.size = options["rank"], options["world_size"]
        self.calls: list = []
        self.closed = False

    def _req(self, name, action=None):
        if self.plugin.fail_start:
            raise OSError("loopback device gone")
        self.calls.append(name)
        return Request(action, hang=self.plugin.hang, fail=self.plugin.fail)

    def all_reduce(self, buf, op):
        def action():
            buf[...] = buf + buf if buf.dtype != np.bool_ else buf

        return self._req(("all_reduce", op, buf.dtype.name, buf.shape), action)

    def broadcast(self, buf, root):
        return self._req(("broadcast", root))

    def reduce(self, buf, op, root):
        return self._req(("reduce", op, root))

    def _copy(self, name, send, recv):
        def action():
            recv[...] = send

        return self._req(name, action)

    def all_gather(self, send, recv):
        return self._copy("all_gather", send, recv)

    def gather(self, send, recv, root):
        return self._copy("gather", send, recv)

    def scatter(self, send, recv, root):
        return self._copy("scatter", send, recv)

    def reduce_scatter(self, send, recv, op):
        return self._copy(("reduce_scatter", op), send, recv)

    def all_to_all(self, send, recv, send_counts, recv_counts):
        self.calls.append(("counts", list(send_counts), list(recv_counts)))
        return self._copy("all_to_all", send, recv)

    def send(self, buf, peer, tag):
        return self._req(("send", peer, tag))

    def recv(self, buf, peer, tag):
        return self._req(("recv", peer, tag))

    def barrier(self):
        return self._req("barrier")

    def abort(self):
        self.calls.append("abort")

    def close(self):
        self.closed = True


class LoopbackPlugin:
    """The plugin object (a module in a real package)."""

    def __init__(self, name="loopback", device_types=("cpu",), needs_store=False):
        self.name, self.device_types, self.needs_store = name, list(device_types), needs_store
        self.hang = self.fail = self.fail_start = False
        self.created: list[Loopback] = []

    @hookimpl
    def ember_collective_backend_info(self):
        return {
            "name": self.name,
            "device_types": self.device_types,
            "memory": "host",
            "needs_store": self.needs_store,
        }

    @hookimpl
    def ember_collective_backend_create(self, options):
        comm = Loopback(self, options)
        self.created.append(comm)
        return comm
