"""Shared memory is freed when its last user lets go, also when a user is killed: nothing is
left in /dev/shm once a process tree has exited, and a living process holds no descriptor or
mapping of memory it dropped. Each scenario runs as its own process tree (leak_jobs.py)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import ember
import ember.multiprocessing as mp
from ember.utils.data._shared_memory import segment_prefix

from . import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/dev/shm and /proc are Linux's")

ROOT = Path(__file__).resolve().parents[2]


def run(name: str, strategy: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "tests.multiprocessing.leak_jobs", name, strategy],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def gone(pattern: str, within: float = 120.0) -> list:
    """What still matches ``pattern`` after waiting up to ``within`` seconds for the resource
    tracker (it cleans up once every process of the tree has exited)."""
    deadline = time.monotonic() + within
    while (left := glob.glob(pattern)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_descriptor_sharing_frees_memory_a_killed_child_held():
    seen = run("killed_receiver", "file_descriptor")
    assert seen["child_exitcode"] == -9 and seen["written"] == 7.0  # it mapped our memory
    assert seen["name"] is None  # a memfd: nothing was ever in /dev/shm
    assert seen["while_held"][0] >= 1 and seen["while_held"][1] >= 1
    assert seen["left"] == [0, 0]  # dropped here, and the kernel freed the killed child's


def test_named_segments_of_a_killed_child_go_when_the_tree_exits():
    seen = run("killed_receiver", "file_system")
    assert seen["child_exitcode"] == -9 and seen["written"] == 7.0
    assert seen["name"].startswith(f"/ember_fs_{seen['pid']}_")
    assert seen["name_after_drop"]  # the killed child's reference was never given back...
    assert gone(f"/dev/shm{seen['name']}") == []  # ...so the resource tracker removed it


def test_killed_dataloader_worker_leaves_no_segment():
    seen = run("killed_loader_worker", "file_descriptor")
    assert "exited unexpectedly" in seen["error"]
    assert gone(f"/dev/shm/{segment_prefix(seen['pid'])}*") == []


@pytest.mark.parametrize("strategy", ["file_system"], indirect=True)
def test_a_child_exiting_with_a_tensor_still_held_gives_its_reference_back(strategy):
    """file_system: a reference held until the interpreter exits is released at exit, so the
    name goes as soon as the parent lets go too (no wait for the tree to exit)."""
    ctx = mp.get_context("fork")
    inbox, done, child = children.start(ctx, children.keep_until_exit)
    x = ember.ones(8)
    inbox.put(x)
    done.get(timeout=120)
    child.join(120)
    name = x._storage.owner.name
    assert child.exitcode == 0 and os.path.exists(f"/dev/shm{name}")
    del x
    assert not os.path.exists(f"/dev/shm{name}")


@pytest.mark.parametrize("strategy", ["file_system"], indirect=True)
def test_a_forked_child_never_gives_back_its_parents_references(strategy):
    x = ember.ones(4).share_memory_()
    y = ember.zeros(4)
    name = x._storage.owner.name
    ctx = mp.get_context("fork")
    inbox, done, child = children.start(ctx, children.drop_inherited_and_receive, [x])
    inbox.put(y)
    done.get(timeout=120)
    child.join(120)
    assert child.exitcode == 0
    assert os.path.exists(f"/dev/shm{name}")  # still the parent's: count 1, not 0
    x.add_(1)
    del x
    assert not os.path.exists(f"/dev/shm{name}")
