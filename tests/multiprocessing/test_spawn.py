"""``spawn`` / ``start_processes``: each failure mode raised in the parent as PyTorch raises it
(same exception types, messages and attributes), the other processes stopped."""

from __future__ import annotations

import sys
import time

import pytest
import torch.multiprocessing as torch_mp

import ember
import ember.multiprocessing as mp

from . import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="tested on Linux")

LIBS = {"ember": mp, "torch": torch_mp}


def failure(lib, fn, args, nprocs=2):
    """The exception ``start_processes`` (fork) raises for ``fn``, and the seconds it took."""
    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        LIBS[lib].start_processes(fn, args=args, nprocs=nprocs, start_method="fork")
    return caught.value, time.monotonic() - start


def test_all_succeed():
    shared = ember.zeros(3).share_memory_()
    assert mp.start_processes(children.fill_rank, (shared,), nprocs=3, start_method="fork") is None
    assert shared.tolist() == [1.0, 2.0, 3.0]


def test_a_raising_child_gives_its_traceback_in_the_parent():
    ours, _ = failure("ember", children.raise_value_error, (1,))
    theirs, _ = failure("torch", children.raise_value_error, (1,))
    assert type(ours) is mp.ProcessRaisedException
    assert type(theirs).__name__ == "ProcessRaisedException"
    for exc in (ours, theirs):
        text = str(exc)
        assert text.startswith("\n\n-- Process 1 terminated with the following error:\n")
        assert "Traceback (most recent call last)" in text
        assert 'children.py", line' in text and "ValueError: rank 1 refuses" in text
        assert exc.error_index == 1
    assert ours.pid > 0


@pytest.mark.parametrize("code", [3, 1])
def test_a_child_exiting_non_zero_stops_the_others(code):
    ours, seconds = failure("ember", children.exit_with, (0, code), nprocs=3)
    theirs, _ = failure("torch", children.exit_with, (0, code), nprocs=3)
    assert type(ours) is mp.ProcessExitedException
    assert str(ours) == str(theirs) == f"process 0 terminated with exit code {code}"
    assert (ours.exit_code, ours.error_index, ours.signal_name) == (code, 0, None)
    # The siblings were terminated, not waited for (they would sleep for SIBLING_SLEEP).
    assert seconds < children.SIBLING_SLEEP / 2


def test_a_child_killed_by_a_signal():
    ours, _ = failure("ember", children.kill_self, (), nprocs=1)
    theirs, _ = failure("torch", children.kill_self, (), nprocs=1)
    assert str(ours) == str(theirs) == "process 0 terminated with signal SIGKILL"
    assert (ours.exit_code, ours.signal_name) == (-9, "SIGKILL")


def test_join_false_returns_the_context():
    shared = ember.zeros(2).share_memory_()
    context = mp.start_processes(
        children.fill_rank, (shared,), nprocs=2, join=False, start_method="fork"
    )
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    deadline = time.monotonic() + 300
    while not context.join(timeout=1):
        assert time.monotonic() < deadline
    assert context.join() and shared.tolist() == [1.0, 2.0]


def test_spawn_with_another_start_method_warns_and_spawns():
    shared = ember.zeros(1)
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        mp.spawn(children.fill_rank, (shared,), nprocs=1, start_method="fork")
    assert shared.tolist() == [1.0]


def test_exceptions_pickle_with_their_fields():
    import pickle

    exc = mp.ProcessExitedException("gone", 2, 123, -15, "SIGTERM")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.msg, back.error_index, back.pid, back.exit_code, back.signal_name) == (
        "gone", 2, 123, -15, "SIGTERM"
    )  # fmt: skip
    raised = pickle.loads(pickle.dumps(mp.ProcessRaisedException("trace", 1, 7)))
    assert (str(raised), raised.error_index, raised.pid) == ("trace", 1, 7)


def test_spawn_raises_a_spawned_childs_traceback():
    """The real spawn start method (a fresh interpreter): the traceback crosses too."""
    with pytest.raises(mp.ProcessRaisedException) as caught:
        mp.spawn(children.raise_value_error, args=(0,), nprocs=1)
    text = str(caught.value)
    assert text.startswith("\n\n-- Process 0 terminated with the following error:\n")
    assert 'children.py", line' in text and "ValueError: rank 0 refuses" in text
    assert caught.value.error_index == 0
