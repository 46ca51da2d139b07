"""HashStore, FileStore, the small queries and debug levels against torch.distributed in one
process; FileStore across processes; subgroups and object send/recv in a 4-rank MPI job
(jobs/stores_and_subgroups.py)."""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os

import pytest
import torch.distributed as tdist

import ember.distributed as dist

from .harness import mpi_or_skip, run_job

SHORT = datetime.timedelta(milliseconds=100)


def outcome(call):
    """What a store call gives: its value, or the type and message of its error."""
    try:
        return call()
    except TypeError:  # torch's message is pybind11's, naming its C++ signature
        return "TypeError"
    except Exception as exc:  # the errors are what is compared
        return type(exc).__name__, str(exc).split(":")[0]


def script(store) -> list:
    """The same operations on an ember or a torch store, and what each gave."""
    store.set_timeout(SHORT)
    return [
        outcome(lambda: store.num_keys()),
        outcome(lambda: store.set("a", "1")),
        outcome(lambda: store.set("b", b"\x00x")),
        outcome(lambda: store.get("a")),
        outcome(lambda: store.get("b")),
        outcome(lambda: store.add("c", 5)),
        outcome(lambda: store.add("c", -2)),
        outcome(lambda: store.get("c")),
        outcome(lambda: type(store.add("b", 1)) and None),
        outcome(lambda: store.compare_set("k", "", "v")),
        outcome(lambda: store.compare_set("k", "zz", "w")),
        outcome(lambda: store.compare_set("k", "v", "w")),
        outcome(lambda: store.compare_set("missing", "x", "w")),
        outcome(lambda: store.check(["a", "k"])),
        outcome(lambda: store.check(["a", "missing"])),
        outcome(lambda: store.delete_key("a")),
        outcome(lambda: store.check(["a"])),
        outcome(lambda: store.num_keys()),
        outcome(lambda: store.get("never")),
        outcome(lambda: store.wait(["k", "never"])),
        outcome(lambda: store.wait(["never"], SHORT)),
        outcome(lambda: store.wait(["k"])),
        outcome(lambda: store.set("x", 3)),
        outcome(lambda: store.timeout),
    ]


def test_hash_store_like_torch():
    ours, theirs = script(dist.HashStore()), script(tdist.HashStore())
    assert ours[:8] == theirs[:8]
    assert ours[8][0] == theirs[8][0] == "ValueError"  # add to a non-integer
    assert ours[9:] == theirs[9:]
    assert ours[18] == ("DistStoreError", "Wait timeout")


def test_hash_store_get_waits_for_another_thread():
    import threading

    store = dist.HashStore()
    threading.Timer(0.05, store.set, ("late", "v")).start()
    assert store.get("late") == b"v"


def test_file_store_like_torch(tmp_path):
    ours = script(dist.FileStore(str(tmp_path / "ours"), 1))
    theirs = script(tdist.FileStore(str(tmp_path / "theirs"), 1))
    assert ours[:8] == theirs[:8]
    assert ours[8][0] == theirs[8][0] == "ValueError"
    assert ours[9:] == theirs[9:]
    assert ours[18] == ("RuntimeError", "Timeout waiting for key")


def test_file_store_shares_torchs_file_and_deletes_it_as_torch_does(tmp_path):
    path = str(tmp_path / "store")
    ours = dist.FileStore(path, 2)
    theirs = tdist.FileStore(path, 2)
    ours.set("from_ember", "1")
    theirs.set("from_torch", "2")
    assert theirs.get("from_ember") == b"1" and ours.get("from_torch") == b"2"
    assert ours.add("n", 2) == 2 and theirs.add("n", 3) == 5
    del theirs
    assert os.path.exists(path)
    del ours  # the second of world_size=2 to close, and none open: the file goes
    assert not os.path.exists(path)
    once = dist.FileStore(path)  # world_size=-1: never deleted
    del once
    assert os.path.exists(path)


def _file_store_worker(path: str, rank: int) -> None:
    store = dist.FileStore(path, 2)
    store.set(f"hello{rank}", str(rank))
    store.add("count", 1)
    other = store.get(f"hello{1 - rank}")
    store.wait(["count"])
    store.set(f"seen{rank}", other)
    store.get(f"seen{1 - rank}")  # stay open until the other has read


def run_workers(path: str) -> list:
    """Run two processes of ``_file_store_worker`` on ``path``; their exit codes."""
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_file_store_worker, args=(path, r)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    return [p.exitcode for p in procs]


def test_file_store_across_processes(tmp_path):
    path = str(tmp_path / "shared")
    assert run_workers(path) == [0, 0]
    assert not os.path.exists(path)  # both closed: deleted


def test_file_store_counts_from_two_processes(tmp_path):
    path = str(tmp_path / "count")
    keep = dist.FileStore(path)
    assert run_workers(path) == [0, 0]
    assert keep.get("count") == b"2" and keep.get("seen0") == b"1" and keep.get("seen1") == b"0"


@pytest.mark.parametrize("local_rank", [None, "3"])
@pytest.mark.parametrize("fallback", [None, 5])
def test_get_node_local_rank_like_torch(monkeypatch, local_rank, fallback):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    if local_rank is not None:
        monkeypatch.setenv("LOCAL_RANK", local_rank)
    assert outcome(lambda: dist.get_node_local_rank(fallback)) == outcome(
        lambda: tdist.get_node_local_rank(fallback)
    )


def test_queries_like_torch():
    for op in ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]:
        ours = dist.supports_complex(getattr(dist.ReduceOp, op))
        assert ours == tdist.supports_complex(getattr(tdist.ReduceOp, op)), op
    assert dist.get_pg_count() == tdist.get_pg_count() == 0
    assert dist.is_backend_available("mpi") == dist.is_mpi_available()
    assert not dist.is_backend_available("gloo")  # not an ember backend
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device("cuda") == tdist.get_default_backend_for_device(
        "cuda"
    )
    assert outcome(lambda: dist.get_default_backend_for_device("meta")) == outcome(
        lambda: tdist.get_default_backend_for_device("meta")
    )


@pytest.mark.parametrize("env", ["EMBER_DISTRIBUTED_DEBUG", "TORCH_DISTRIBUTED_DEBUG"])
def test_debug_levels_like_torch(monkeypatch, env):
    from ember.distributed import _debug

    monkeypatch.setattr(_debug, "_LEVEL", [None])
    monkeypatch.delenv("EMBER_DISTRIBUTED_DEBUG", raising=False)
    monkeypatch.delenv("TORCH_DISTRIBUTED_DEBUG", raising=False)
    saved = tdist.get_debug_level()
    try:
        for value in ["info", "DETAIL", "off", "bogus"]:
            monkeypatch.setenv(env, value)
            ours = outcome(dist.set_debug_level_from_env)
            monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", value)
            theirs = outcome(tdist.set_debug_level_from_env)
            assert (ours, theirs) == (None, None) or ours[0] == theirs[0] == "ValueError"
            assert str(dist.get_debug_level()) == str(tdist.get_debug_level())
        dist.set_debug_level(dist.DebugLevel.DETAIL)
        assert _debug.enabled() and int(dist.get_debug_level()) == int(tdist.DebugLevel.DETAIL)
        assert repr(dist.DebugLevel.INFO) == repr(tdist.DebugLevel.INFO)
    finally:
        tdist.set_debug_level(saved)


def test_new_subgroups_argument_errors_like_torch(backends):
    from .loopback import LoopbackPlugin

    backends({"loopback": LoopbackPlugin()})
    dist.init_process_group("loopback", rank=0, world_size=1)
    assert outcome(lambda: dist.new_subgroups(0)) == (
        "ValueError",
        "The arg 'group_size' (0) must be positive",
    )
    assert outcome(lambda: dist.new_subgroups(2))[0] == "ValueError"
    assert outcome(lambda: dist.new_subgroups_by_enumeration([]))[0] == "ValueError"
    assert outcome(lambda: dist.new_subgroups_by_enumeration([[0], [0]])) == (
        "ValueError",
        "Rank 0 has appeared in both subgroup [0] and [0]",
    )
    cur, subgroups = dist.new_subgroups(1)
    assert subgroups == [cur] and dist.get_process_group_ranks(cur) == [0]
    assert dist.get_pg_count() == 4  # the world, the two of the overlap error, this one


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    mpi_or_skip()
    out = tmp_path_factory.mktemp("stores_and_subgroups")
    done, _ = run_job("stores_and_subgroups.py", 4, out, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(4)]


def test_subgroups_reach_their_ranks(ranks):
    halves = [{"cur": 3, "all": [3, -1]}] * 2 + [{"cur": 12, "all": [-1, 12]}] * 2
    assert [r["halves"] for r in ranks] == halves
    pairs = [9, 6, 6, 9]
    assert [r["pairs"]["cur"] for r in ranks] == pairs
    assert [r["pairs"]["all"] for r in ranks] == [[9, -1], [-1, 6], [-1, 6], [9, -1]]
    assert [r["pg_count"] for r in ranks] == [5] * 4
    assert sorted(r["local_rank"] for r in ranks) == [0, 1, 2, 3]


def test_a_first_send_between_two_ranks_does_not_wait_for_the_others(ranks):
    """Ranks 1 and 2 exchange before any collective (the job's timeout fails it if they wait
    for ranks 0 and 3 to make the world's communicator)."""
    assert [r["first_p2p"] for r in ranks] == [0.0, 10.0, 10.0, 30.0]


def test_objects_sent_and_received(ranks):
    assert ranks[3]["world_sender"] == 0
    assert ranks[3]["world_objects"] == [0, 5000, [[1, 2.5, None], "ü"]]
    assert ranks[2]["group_sender"] == 1 and ranks[2]["group_objects"] == ["ü"]
