"""TCPStore and PrefixStore: the rendezvous's key-value store, as PyTorch's behaves."""

from __future__ import annotations

import datetime
import threading
import time

import pytest

import ember.distributed as dist


@pytest.fixture
def server():
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=datetime.timedelta(seconds=5))
    yield store
    store.close()


def test_set_get_add_check_delete(server):
    client = dist.TCPStore("127.0.0.1", server.port)
    client.set("k", b"value")
    client.set("s", "text")
    assert server.get("k") == b"value" and server.get("s") == b"text"
    assert client.add("n", 2) == 2 and server.add("n", 3) == 5
    assert client.check(["k", "n"]) and not client.check(["k", "missing"])
    assert client.num_keys() == 3
    assert client.delete_key("k") and not client.delete_key("k")
    assert client.compare_set("c", "", "first") == b"first"
    assert client.compare_set("c", "wrong", "second") == b"first"
    client.close()


def test_get_waits_for_the_key(server):
    client = dist.TCPStore("127.0.0.1", server.port)
    threading.Timer(0.2, lambda: server.set("late", b"1")).start()
    start = time.monotonic()
    assert client.get("late") == b"1"
    assert time.monotonic() - start >= 0.15
    client.close()


def test_get_times_out_with_the_key_named(server):
    server.set_timeout(datetime.timedelta(seconds=0.2))
    with pytest.raises(dist.DistStoreError, match=r"wait timeout after 200ms, keys: \['never'\]"):
        server.get("never")
    with pytest.raises(dist.DistStoreError, match="wait timeout"):
        server.wait(["never"], datetime.timedelta(seconds=0.1))


def test_prefix_store_namespaces(server):
    a, b = dist.PrefixStore("a", server), dist.PrefixStore("b", server)
    a.set("x", b"1")
    b.set("x", b"2")
    assert (a.get("x"), b.get("x"), server.get("a/x")) == (b"1", b"2", b"1")
    assert a.add("n", 1) == 1 and b.add("n", 5) == 5


def test_unreachable_master_is_a_network_error():
    with pytest.raises(dist.DistNetworkError, match="could not connect to the store"):
        dist.TCPStore("127.0.0.1", 1, timeout=datetime.timedelta(seconds=0.3))


def test_master_gone_is_a_network_error(server):
    client = dist.TCPStore("127.0.0.1", server.port)
    server.close()
    with pytest.raises(dist.DistNetworkError, match="gone"):
        client.get("anything")
