"""Soak: training loops and DataLoader epochs run in constant memory.

After a warm-up (caches filled, kernels built, optimizer state allocated), what the process holds
is measured at the ends of several windows of steps and must not have grown: open file
descriptors, ember's shared-memory segments (names in /dev/shm and mappings in this process),
live Python objects, and the caching allocator's bytes in use and reserved segments on the device
trained on. A leak of one small tensor, graph node or file per step shows up here long before a
user's long run dies of it.

Resident memory is noisier: glibc's arenas and the OpenCL runtime grow the heap in steps of
megabytes once in a while (7.6 MB in one window of 60 steps on CI, every other count flat). A leak
grows it in every window, so its rate is the median growth of a window: a one-off step of any size
in up to three windows of seven leaves the median flat, a leak of 128 KiB a step (8 steps a
window) does not (the self-tests below check both).
"""

from __future__ import annotations

import gc
import glob
import itertools
import mmap
import multiprocessing
import os
from dataclasses import dataclass

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatcher.devices import REGISTRY
from ember.utils.data import DataLoader, Dataset
from ember.utils.data._shared_memory import segment_prefix

PAGE = os.sysconf("SC_PAGE_SIZE")
RSS_SLACK = 4 * 2**20  # resident growth a run may project from its median window (see above)
WINDOWS = 7  # measurements after the warm-up, the steps split evenly between them (odd: the
# median is one window's growth, and a leak shows only if at least four windows grew)
OBJECT_SLACK = 200  # interned strings, caches of the typing and re modules...
# Steps before the first measurement and between the two, per device: the OpenCL device of the
# tests (PoCL) and the example backend (CPU fallback with copies) run fewer in the same time.
STEPS = {"xpu": (20, 60), "ref": (20, 60)}
DEFAULT_STEPS = (50, 150)


@dataclass(frozen=True)
class Usage:
    """What the process holds, after a full garbage collection."""

    rss: int
    fds: int
    shm_names: tuple
    shm_maps: int
    objects: int
    allocated: int
    segments: int

    @classmethod
    def now(cls, device: str) -> Usage:
        gc.collect()
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * PAGE
        prefix = segment_prefix(os.getpid())
        with open("/proc/self/maps") as f:
            maps = sum(1 for line in f if f"/dev/shm/{prefix}" in line)
        # Every caching allocator of the device type (one per device index; the CPU's is None).
        stats = [a.stats() for a in REGISTRY.backend(device).allocators().values()]
        return cls(
            rss=rss,
            fds=len(os.listdir("/proc/self/fd")),
            shm_names=tuple(sorted(glob.glob(f"/dev/shm/{prefix}*"))),
            shm_maps=maps,
            objects=len(gc.get_objects()),
            allocated=sum(s["allocated_bytes.current"] for s in stats),
            segments=sum(s["segments.current"] for s in stats),
        )


def assert_flat(usages: list, what: str) -> None:
    """``usages``: one ``Usage`` after the warm-up, then one after each window of steps."""
    before, after = usages[0], usages[-1]
    windows = [b.rss - a.rss for a, b in itertools.pairwise(usages)]
    grown = {
        # The median window's growth, over the whole run: a leak's, not a one-off step's.
        "resident memory (bytes)": (int(np.median(windows)) * len(windows), RSS_SLACK),
        "open file descriptors": (after.fds - before.fds, 0),
        "shared-memory mappings": (after.shm_maps - before.shm_maps, 0),
        "live Python objects": (after.objects - before.objects, OBJECT_SLACK),
        "allocator bytes in use": (after.allocated - before.allocated, 0),
        "allocator segments": (after.segments - before.segments, 0),
    }
    over = {name: growth for name, (growth, slack) in grown.items() if growth > slack}
    assert not over, (
        f"{what}: grew between {before} and {after} (resident growth per window {windows}): {over}"
    )
    assert after.shm_names == (), f"{what}: shared-memory segments left: {after.shm_names}"


def soak(device: str, run, count: int) -> list:
    """``Usage`` now and after each of ``WINDOWS`` calls ``run(count // WINDOWS)``.

    What lives before the first measurement is frozen out of the collector (``gc.freeze``):
    every measurement's full collection and object count then walk only what the soak made,
    not the half million objects of a test process that imported torch's OpInfo database (a
    second per measurement there). Objects made by the steps are counted as before."""
    gc.collect()
    gc.freeze()  # stays frozen after the soak, as the test run freezes (tests/conftest.py)
    usages = [Usage.now(device)]
    for _ in range(WINDOWS):
        run(count // WINDOWS)
        usages.append(Usage.now(device))
    return usages


def _mlp() -> nn.Module:
    # Small enough that OpenBLAS stays on one thread: its threads, spinning against other
    # processes on a busy 2-core machine, made a 32x256 @ 256x256 product take 20 ms.
    return nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10)
    )


class _Bag(nn.Module):
    """A 4096x64 float32 table is 1 MiB: it, its gradient and Adam's moments go through the
    CPU caching allocator (which sees requests of 1 MiB and more), without a large matmul."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(4096, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, tokens):
        return self.head(self.embed(tokens).mean(1))


def _cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.GELU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 2 * 2, 10),
    )


def _train(model, optimizer, batches, steps: int) -> float:
    loss = None
    for step in range(steps):
        x, target = batches[step % len(batches)]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()
    return loss.item()


def _batches(device, shape, tokens=False, count=4, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = rng.integers(0, 4096, shape) if tokens else rng.standard_normal(shape)
        x = x if tokens else x.astype(np.float32)
        target = rng.integers(0, 10, shape[0])
        out.append((ember.from_numpy(x).to(device), ember.from_numpy(target).to(device)))
    return out


@pytest.mark.parametrize(
    "model, optimizer, shape",
    [
        (_mlp, lambda p: ember.optim.Adam(p, lr=1e-3), (16, 64)),
        (_cnn, lambda p: ember.optim.SGD(p, lr=1e-2, momentum=0.9), (16, 1, 8, 8)),
        (_Bag, lambda p: ember.optim.Adam(p, lr=1e-2), (16, 5)),
    ],
    ids=["mlp-adam", "cnn-sgd", "embedding-adam"],
)
def test_training_steps_run_in_constant_memory(model, optimizer, shape, device):
    warmup, steps = STEPS.get(device, DEFAULT_STEPS)
    ember.manual_seed(0)
    net = model().to(device)
    opt = optimizer(net.parameters())
    batches = _batches(device, shape, tokens=model is _Bag)
    first_loss = _train(net, opt, batches, warmup)
    losses = []
    usages = soak(device, lambda count: losses.append(_train(net, opt, batches, count)), steps)
    assert losses[-1] < first_loss, "the model did not fit its batches: the loop is not training"
    assert_flat(usages, f"{steps} training steps on {device}")


class Images(Dataset):
    """Small images and labels, made from the index (a worker needs no shared state)."""

    def __len__(self):
        return 96

    def __getitem__(self, i):
        image = ember.full((1, 8, 8), float(i % 7) - 3.0)
        return image, i % 10


def test_dataloader_epochs_with_workers_run_in_constant_memory():
    """Every epoch starts two worker processes and moves its batches through shared memory:
    processes, segments, their mappings and descriptors are all given back."""
    ember.manual_seed(0)
    net = _cnn()
    opt = ember.optim.SGD(net.parameters(), lr=1e-2)
    loader = DataLoader(
        Images(), batch_size=16, shuffle=True, num_workers=2, multiprocessing_context="fork"
    )

    def epochs(count: int) -> None:
        for _ in range(count):
            _train(net, opt, list(loader), len(loader))

    epochs(2)
    usages = soak("cpu", epochs, WINDOWS)
    assert multiprocessing.active_children() == [], "worker processes left running"
    assert_flat(usages, f"{WINDOWS} DataLoader epochs with 2 workers")


# Self-tests: the checks above catch leaks that the library could have and let noise pass.


def _touched_block(size: int, held: list) -> None:
    """``size`` bytes of fresh pages, written so they are resident, and not given back (as a
    kernel or binding forgetting a free would leave them); ``held`` keeps them to release later.
    Anonymous pages, not malloc: in a busy test process glibc could hand out heap that earlier
    tests freed but kept resident, and the resident size would not move (CI saw all windows
    at 0 around a 32 MiB block)."""
    block = mmap.mmap(-1, size)
    block.write(b"\1" * size)
    held.append(block)


def _cpu_run(leak_per_step) -> tuple:
    """Windows of 8 steps of the MLP on cpu after a warm-up, calling ``leak_per_step(step)``
    after each step."""
    ember.manual_seed(0)
    net = _mlp()
    opt = ember.optim.Adam(net.parameters(), lr=1e-3)
    batches = _batches("cpu", (16, 64))
    _train(net, opt, batches, 20)
    done = [0]

    def run(count):
        for _ in range(count):
            _train(net, opt, batches, 1)
            leak_per_step(done[0])
            done[0] += 1

    return soak("cpu", run, 8 * WINDOWS)


def test_soak_catches_a_resident_leak_of_each_step():
    held = []
    try:
        usages = _cpu_run(lambda step: _touched_block(128 * 2**10, held))
        with pytest.raises(AssertionError, match="resident memory"):
            assert_flat(usages, "steps leaking 128 KiB each")
    finally:
        for block in held:
            block.close()


def test_soak_catches_a_tensor_kept_each_step():
    kept = []
    usages = _cpu_run(lambda step: kept.append(ember.ones(4, requires_grad=True) * 2))
    with pytest.raises(AssertionError, match="live Python objects"):
        assert_flat(usages, "steps keeping a tensor each")


def test_soak_lets_one_off_heap_growth_pass():
    """The allocator growing its heap once (as glibc's arenas do now and then: 7.6 MB on CI) is
    no leak: the median window is flat though one window grew. The block is 32 MiB so that its
    window stands out of what the rest of a busy test process frees meanwhile (CI once saw the
    whole run's resident size grow by only 2 MiB around an 8 MiB block)."""
    held = []
    try:
        usages = _cpu_run(lambda step: step == 30 and _touched_block(32 * 2**20, held))
        windows = [b.rss - a.rss for a, b in itertools.pairwise(usages)]
        assert max(windows) > RSS_SLACK, f"the one-off growth did not happen: {windows}"
        assert_flat(usages, "steps growing the heap once")
    finally:
        for block in held:
            block.close()
