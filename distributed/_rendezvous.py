"""How ranks find each other: ``init_method`` (``env://``, ``tcp://host:port``) or a store.

An MPI job needs nothing from here: MPI's launcher placed every rank. A backend that exchanges
bootstrap data (NCCL's unique id) asks for the store, which rank 0 serves at
``MASTER_ADDR:MASTER_PORT``; it is created the first time such a backend needs it (all ranks
reach that point together, in their first collective on that backend's device type).
"""

from __future__ import annotations

import os
import urllib.parse

from ._store import TCPStore


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else None


class Rendezvous:
    """What ``init_process_group`` was told about the job, and the store made from it.

    Args:
        init_method: ``"env://"`` (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``)
            or ``"tcp://host:port"``; None with a ``store``.
        rank, world_size: -1 to take them from the environment or the launcher.
        timeout: seconds a store operation waits.
        store: a ready store (``TCPStore``, ``PrefixStore``), instead of ``init_method``.
    """

    def __init__(self, init_method, rank: int, world_size: int, timeout: float, store=None):
        self.timeout = timeout
        self._store = store
        self._owned = False
        self.address: tuple[str, int] | None = None
        self.rank = rank if rank >= 0 else None
        self.world_size = world_size if world_size >= 0 else None
        if store is not None:
            return
        url = urllib.parse.urlparse(init_method or "env://")
        if url.scheme == "env":
            self.rank = self.rank if self.rank is not None else _env_int("RANK")
            if self.world_size is None:
                self.world_size = _env_int("WORLD_SIZE")
            port = _env_int("MASTER_PORT")
            if os.environ.get("MASTER_ADDR") and port is not None:
                self.address = (os.environ["MASTER_ADDR"], port)
        elif url.scheme == "tcp":
            if url.hostname is None or url.port is None:
                raise ValueError(f"init_method '{init_method}' must be tcp://host:port")
            self.address = (url.hostname, url.port)
        else:
            raise ValueError(
                f"init_method '{init_method}': ember supports env:// and tcp://host:port (or "
                "pass store=)"
            )

    def store(self, backend: str):
        """The job's store (rank 0 serves it), created on first use."""
        if self._store is None:
            if self.address is None:
                raise ValueError(
                    f"the '{backend}' backend exchanges its bootstrap data through a store: set "
                    "MASTER_ADDR and MASTER_PORT (emberrun does) or pass init_method="
                    "'tcp://host:port' or store= to init_process_group"
                )
            host, port = self.address
            self._store = TCPStore(host, port, self.world_size, self.rank == 0, self.timeout)
            self._owned = True
        return self._store

    def close(self) -> None:
        if self._owned:
            self._store.close()
        self._store = None
