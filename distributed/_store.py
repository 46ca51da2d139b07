"""Key-value stores for the rendezvous: ``TCPStore`` and ``PrefixStore``, as in PyTorch.

A store carries only what ranks must exchange before a collective engine exists (NCCL's unique
id, a subgroup's id); every collective itself is an MPI or NCCL call. MPI jobs need no store:
MPI's launcher does their rendezvous. The server is a thread in the master process (rank 0);
values are bytes; ``get`` and ``wait`` block on the server until the key exists or the timeout.

Wire format (one request, one reply, over a persistent connection): request ``!BI`` (op, number
of fields) then each field as ``!I`` length + bytes; reply ``!BI`` (status, length) + bytes.
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import socketserver
import struct
import threading
import time

from ._errors import DistNetworkError, DistStoreError

_SET, _GET, _ADD, _CHECK, _WAIT, _DELETE, _NUM_KEYS, _COMPARE_SET = range(8)
_OK, _TIMEOUT, _FAILED = range(3)
_HEADER = struct.Struct("!BI")
_LENGTH = struct.Struct("!I")
DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def _read_exact(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("the store's peer closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send_fields(sock: socket.socket, head: int, fields) -> None:
    parts = [_HEADER.pack(head, len(fields))]
    for field in fields:
        parts += [_LENGTH.pack(len(field)), field]
    sock.sendall(b"".join(parts))


class _Table:
    """The server's keys and the condition waiters block on."""

    def __init__(self):
        self.data: dict[bytes, bytes] = {}
        self.changed = threading.Condition()

    def wait_for(self, keys, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        with self.changed:
            while not all(k in self.data for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True

    def apply(self, op: int, fields: list) -> tuple[int, bytes]:
        if op in (_GET, _WAIT):
            seconds = struct.unpack("!d", fields[0])[0]
            keys = fields[1:]
            if not self.wait_for(keys, seconds):
                return _TIMEOUT, b""
            return _OK, self.data[keys[0]] if op == _GET else b""
        with self.changed:
            try:
                return _OK, self._mutate(op, fields)
            finally:
                self.changed.notify_all()

    def _mutate(self, op: int, fields: list) -> bytes:
        data = self.data
        if op == _SET:
            data[fields[0]] = fields[1]
            return b""
        if op == _ADD:
            value = int(data.get(fields[0], b"0")) + int(fields[1])
            data[fields[0]] = str(value).encode()
            return data[fields[0]]
        if op == _COMPARE_SET:
            key, expected, desired = fields
            current = data.get(key)
            if (current is None and expected == b"") or current == expected:
                data[key] = desired
            return data.get(key, expected)
        if op == _CHECK:
            return b"1" if all(k in data for k in fields) else b"0"
        if op == _DELETE:
            return b"1" if data.pop(fields[0], None) is not None else b"0"
        if op == _NUM_KEYS:
            return str(len(data)).encode()
        raise ValueError(f"unknown store operation {op}")


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.connections.add(sock)
        try:
            while True:
                op, count = _HEADER.unpack(_read_exact(sock, _HEADER.size))
                fields = []
                for _ in range(count):
                    (length,) = _LENGTH.unpack(_read_exact(sock, _LENGTH.size))
                    fields.append(_read_exact(sock, length))
                try:
                    status, payload = self.server.table.apply(op, fields)
                except Exception as exc:  # a malformed request fails that request only
                    status, payload = _FAILED, str(exc).encode()
                sock.sendall(_HEADER.pack(status, len(payload)) + payload)
        except (ConnectionError, OSError):
            return
        finally:
            self.server.connections.discard(sock)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str, port: int):
        super().__init__((host, port), _Handler)
        self.table = _Table()
        self.connections: set = set()

    def close(self) -> None:
        """Stop serving and drop every client, as the master process's exit would."""
        self.shutdown()
        self.server_close()
        for sock in list(self.connections):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class Store:
    """Base class of stores (``torch.distributed.Store``): bytes by key, shared by the ranks."""

    def __init__(self, timeout=DEFAULT_TIMEOUT):
        self._timeout = _seconds(timeout)

    @property
    def timeout(self) -> datetime.timedelta:
        return datetime.timedelta(seconds=self._timeout)

    def set_timeout(self, timeout) -> None:
        self._timeout = _seconds(timeout)


class TCPStore(Store):
    """A store served over TCP by the master process (PyTorch's ``TCPStore``).

    Args:
        host_name: the master's address.
        port: its port (0 on the master picks a free one; read it back from ``port``).
        world_size: accepted for compatibility.
        is_master: serve the store from this process.
        timeout: how long ``get``/``wait`` and connecting wait before ``DistStoreError``.
        wait_for_workers: accepted for compatibility.

    Example:
        >>> server = TCPStore("127.0.0.1", 0, is_master=True)
        >>> TCPStore("127.0.0.1", server.port).set("k", b"v"); server.get("k")
        b'v'
    """

    def __init__(
        self,
        host_name: str,
        port: int,
        world_size: int | None = None,
        is_master: bool = False,
        timeout=DEFAULT_TIMEOUT,
        wait_for_workers: bool = True,
        **_compat,
    ):
        super().__init__(timeout)
        self.host, self._server = host_name, None
        if is_master:
            self._server = _Server(host_name, port)
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.port = port
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self) -> socket.socket:
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self._timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as exc:  # the master may not listen yet
                if time.monotonic() > deadline:
                    raise DistNetworkError(
                        f"could not connect to the store at {self.host}:{self.port} within "
                        f"{self._timeout:g} s: {exc} (is rank 0 running and MASTER_ADDR/"
                        "MASTER_PORT right?)"
                    ) from exc
                time.sleep(0.05)

    def _call(self, op: int, fields, wait_seconds: float | None = None) -> bytes:
        fields = [f.encode() if isinstance(f, str) else bytes(f) for f in fields]
        with self._lock:
            self._sock.settimeout(None if wait_seconds is None else wait_seconds + 30)
            try:
                _send_fields(self._sock, op, fields)
                status, length = _HEADER.unpack(_read_exact(self._sock, _HEADER.size))
                payload = _read_exact(self._sock, length)
            except OSError as exc:
                raise DistNetworkError(
                    f"the store at {self.host}:{self.port} is gone ({exc}): the master "
                    "process (rank 0) has probably exited"
                ) from exc
        if status == _FAILED:
            raise DistStoreError(payload.decode())
        if status == _TIMEOUT:
            keys = [f.decode(errors="replace") for f in fields[1:]]
            raise DistStoreError(f"wait timeout after {wait_seconds * 1000:.0f}ms, keys: {keys}")
        return payload

    def set(self, key: str, value) -> None:
        self._call(_SET, [key, value])

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the store's timeout for it to be set."""
        return self._call(_GET, [struct.pack("!d", self._timeout), key], self._timeout)

    def add(self, key: str, amount: int) -> int:
        return int(self._call(_ADD, [key, str(int(amount))]))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        return self._call(_COMPARE_SET, [key, expected_value, desired_value])

    def check(self, keys) -> bool:
        return self._call(_CHECK, list(keys)) == b"1"

    def wait(self, keys, timeout=None) -> None:
        seconds = self._timeout if timeout is None else _seconds(timeout)
        self._call(_WAIT, [struct.pack("!d", seconds), *keys], seconds)

    def delete_key(self, key: str) -> bool:
        return self._call(_DELETE, [key]) == b"1"

    def num_keys(self) -> int:
        return int(self._call(_NUM_KEYS, []))

    def close(self) -> None:
        self._sock.close()
        if self._server is not None:
            self._server.close()
            self._server = None


class PrefixStore(Store):
    """A view of ``store`` whose keys all start with ``prefix/`` (one namespace per group)."""

    def __init__(self, prefix: str, store: Store):
        super().__init__(store.timeout)
        self.prefix, self.underlying_store = prefix, store

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def set(self, key, value) -> None:
        self.underlying_store.set(self._key(key), value)

    def get(self, key) -> bytes:
        return self.underlying_store.get(self._key(key))

    def add(self, key, amount) -> int:
        return self.underlying_store.add(self._key(key), amount)

    def compare_set(self, key, expected_value, desired_value) -> bytes:
        return self.underlying_store.compare_set(self._key(key), expected_value, desired_value)

    def check(self, keys) -> bool:
        return self.underlying_store.check([self._key(k) for k in keys])

    def wait(self, keys, timeout=None) -> None:
        self.underlying_store.wait([self._key(k) for k in keys], timeout)

    def delete_key(self, key) -> bool:
        return self.underlying_store.delete_key(self._key(key))

    def num_keys(self) -> int:
        return self.underlying_store.num_keys()
