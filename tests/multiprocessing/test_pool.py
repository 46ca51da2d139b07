"""Pools over tensors: tasks and results share memory under both strategies, as PyTorch's
pools do; a worker that the pool ends just after it sent a result (``maxtasksperchild``,
``close``) still hands the result over (PyTorch's pool hangs there); spawned workers and
initializers get shared tensors."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.multiprocessing as torch_mp

import ember
import ember.multiprocessing as mp

from . import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="sharing is tested on Linux")

FORK = mp.get_context("fork")
LIBS = {"ember": (ember, mp), "torch": (torch, torch_mp)}
WAIT = 300  # seconds for any result: generous, a loaded machine is slow, a hang is not


def squares_of(m, n: int) -> list:
    return [m.full((3,), float(i)) for i in range(n)]


@pytest.mark.parametrize("name", ["ember", "torch"])
def test_map_shares_tasks_and_results(name, strategy):
    m, lib_mp = LIBS[name]
    lib_mp.set_sharing_strategy(strategy)
    try:
        xs = squares_of(m, 4)
        with lib_mp.get_context("fork").Pool(2) as pool:
            out = pool.map_async(children.square, xs).get(timeout=WAIT)
    finally:
        lib_mp.set_sharing_strategy("file_descriptor")
    assert [t.tolist() for t in out] == [[float(i * i)] * 3 for i in range(4)]
    assert all(t.is_shared() for t in xs + out)


def test_workers_ended_after_each_task_hand_over_their_results(strategy):
    """Each worker exits right after sending its one result: under ``file_descriptor`` it
    waits until the pool's result thread has collected the descriptor."""
    with FORK.Pool(2, maxtasksperchild=1) as pool:
        out = pool.map_async(children.square, squares_of(ember, 6), chunksize=1).get(WAIT)
    assert [t.tolist() for t in out] == [[float(i * i)] * 3 for i in range(6)]


def test_results_outlive_close_and_join(strategy):
    pool = FORK.Pool(2)
    try:
        pending = [pool.apply_async(children.square, (x,)) for x in squares_of(ember, 8)]
        pool.close()
        pool.join()  # the workers have exited: their results were collected before
        out = [result.get(timeout=WAIT) for result in pending]
    finally:
        pool.terminate()
    assert [t.tolist() for t in out] == [[float(i * i)] * 3 for i in range(8)]
    assert sum(1 for t in out if t.is_shared()) == 8


def test_imap_of_views_keeps_strides():
    base = ember.arange(24.0).view(4, 6)
    views = [base[:, i] for i in range(6)]  # strided columns of one storage
    with FORK.Pool(2) as pool:
        out = list(pool.imap(children.square, views))
    for view, got in zip(views, out):
        assert got.tolist() == [v * v for v in view.tolist()]
    assert base.is_shared()  # the columns' storage moved, in place, on the first send


def test_spawned_workers_write_their_initializers_shared_tensor():
    board = ember.zeros(6)
    spawn = mp.get_context("spawn")
    tasks = [(i, ember.full((2,), float(i))) for i in range(6)]
    with spawn.Pool(2, initializer=children.keep_board, initargs=(board,)) as pool:
        out = pool.starmap_async(children.mark, tasks).get(timeout=WAIT)
    assert board.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]  # every worker wrote ours
    assert [t.tolist() for t in out] == [[float(i * i)] * 2 for i in range(6)]


def test_descriptors_in_flight_are_counted_until_collected():
    report = FORK.Queue()
    child = FORK.Process(target=children.descriptors_in_flight, args=(report,))
    child.start()
    seen = report.get(timeout=WAIT)
    child.join(WAIT)
    assert seen == [0, 1, False, True, 0] and child.exitcode == 0
