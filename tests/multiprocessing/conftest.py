"""Fixtures of the multiprocessing tests: the sharing strategy, and no child left behind."""

from __future__ import annotations

import multiprocessing

import pytest

import ember.multiprocessing as mp

# How long a child the test left running gets to exit by itself (a loaded machine is slow).
GRACE = 60


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    before = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(before)


@pytest.fixture(autouse=True)
def no_child_left_behind():
    """Every child a test starts has exited when it ends; one still running after ``GRACE``
    seconds is killed (it is ours) and fails the test, so none outlives the session."""
    before = set(multiprocessing.active_children())  # another test's are not this one's
    yield
    left = [child for child in multiprocessing.active_children() if child not in before]
    for child in left:
        child.join(GRACE)
    stuck = [child for child in left if child.is_alive()]
    for child in stuck:
        child.kill()
        child.join()
    assert not stuck, f"children still running after the test: {stuck}"
