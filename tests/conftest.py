"""Shared test configuration: which devices to test, seeded randomness, hypothesis settings.

Devices come from ``EMBER_TEST_DEVICES`` (a comma list such as ``cpu,xpu``); by default every
device type some installed backend plugin declares. Any test taking a ``device`` argument is run
once per device; a device that was asked for but cannot be used is still listed, as a skip that
gives the reason (``-ra`` shows it), so a missing device is never mistaken for a pass.
"""

from __future__ import annotations

import functools
import gc
import itertools
import os
import zlib

from . import pycache_prefix  # noqa: F401  (first: later imports write their bytecode there)

# Spinning OpenMP workers starve each other when pytest-xdist runs several processes on few
# cores (a 40000-element add took 15 ms instead of 0.03 ms on 2 busy cores). Sleeping workers
# keep the parallel kernels tested without that cost. libgomp reads this when it loads, which
# is when the CPU backend is first used, so it must be set before any test touches a tensor.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

# PoCL (the xpu backend's OpenCL in CI) starts a thread per core for every kernel and has no
# passive mode: two workers on two cores each ran four busy threads, and tests/ops/test_ops.py's
# xpu half took 247 s instead of 118 s. Its pool is sized to the worker's share of the cores
# (the machine's split between xdist's workers); PoCL reads this when the platform is first
# opened, after this file has run.
os.environ.setdefault(
    "POCL_MAX_PTHREAD_COUNT",
    str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))),
)

# The xpu backend's OpenCL programs are built at first use per op family and dtype; on PoCL,
# CI's OpenCL, building and the first launch of each kernel were about 1000 of a cold run's
# 3925 worker-seconds (2026-11-29), most of it in LLVM's optimizer. The tests check what the
# kernels compute, not how fast PoCL's code runs (users' GPU drivers compile with their own
# compilers anyway): unoptimized builds cut a cold OpInfo subset on xpu from 90 s to 72 s.
os.environ.setdefault("EMBER_XPU_BUILD_OPTIONS", "-cl-opt-disable")
# CLBlast builds its own programs (the GEMMs of the xpu products), with no options of ours: PoCL
# adds this to every build it makes, ember's included. A cold batched complex GEMM took 16 s of a
# 22 s test at full optimization, 7.5 s without (2026-11-29); the products' tests compare with
# PyTorch. Setting both variables to " " restores optimized builds on PoCL.
os.environ.setdefault("POCL_EXTRA_BUILD_FLAGS", "-cl-opt-disable")

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import ember
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.plugins import BACKENDS_GROUP

# The OpInfo suite's pass counts, printed at the end of a run (also under xdist).
pytest_plugins = ("tests.ops.opinfo.report",)

settings.register_profile(
    "ember",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("ember-long", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ember"))


def requested_device_types() -> list[str]:
    """Device types to test: ``EMBER_TEST_DEVICES``, else every type a backend plugin declares."""
    wanted = os.environ.get("EMBER_TEST_DEVICES", "").strip()
    if wanted:
        return [name.strip() for name in wanted.split(",") if name.strip()]
    found = []
    for record in REGISTRY.host.records(BACKENDS_GROUP):
        for device_type in record.device_types:
            if device_type not in found:
                found.append(device_type)
    return found or ["cpu"]


@functools.cache
def unavailable_reason(device_type: str) -> str | None:
    """None when ``device_type`` works (its backend loads and holds a tensor), else why not."""
    try:
        REGISTRY.backend(device_type)
        probe = ember.zeros(2, device=device_type)
        if probe.cpu().tolist() != [0.0, 0.0]:
            return f"device '{device_type}' loads but a zeros(2) tensor reads back wrong"
    except Exception as exc:  # any failure means "not usable here"; the message says why
        return f"device '{device_type}' unavailable: {type(exc).__name__}: {exc}"
    return None


def available_device_types() -> list[str]:
    return [d for d in requested_device_types() if unavailable_reason(d) is None]


def device_params() -> list:
    """``pytest.param`` per requested device; unusable ones carry a skip mark with the reason."""
    params = []
    for device_type in requested_device_types():
        reason = unavailable_reason(device_type)
        marks = [pytest.mark.skip(reason=reason)] if reason else []
        params.append(pytest.param(device_type, marks=marks, id=device_type))
    return params


# The example plugin's `ref` device runs nearly every op through the CPU fallback (cpu's kernels
# behind one more copy each way), so the sweeps over every op (gradcheck, OpInfo) check a fixed
# third of the ops there, spread by name hash: the same glue on every op, cpu's kernels again.
# Every op on ref took about 1500 of CI's 8000 worker-seconds (2026-11-28).
FALLBACK_DEVICES = frozenset({"ref"})
SHARE = 3


def in_share(name: str) -> bool:
    """Whether op ``name`` is in the fixed third a device that does not check every op checks."""
    return zlib.crc32(name.encode()) % SHARE == 0


def full_device() -> str:
    """The device the sweeps over ops check thoroughly: cpu, or when cpu is not tested the first
    usable device (cuda in the GPU acceptance run)."""
    usable = available_device_types()
    return "cpu" if "cpu" in usable else (usable or ["cpu"])[0]


_PARAM = type(pytest.param(None))  # what pytest.param makes (its class is not public)


def device_op_params(items, item_name, every_op, every_item=None) -> list:
    """(device, item) params of a sweep over ops: every item where ``every_op(device, full)``
    holds (``full``: ``full_device()``), elsewhere the items in the share and those where
    ``every_item(device, item)`` holds. An item may be a ``pytest.param`` of one value: its marks
    stay with it on every device. A device that cannot be used here is one skipped param
    with the reason (CI's cuda was 13000 of a run's 72000 tests, each skipped alike)."""
    full = full_device()
    params = []
    for device in device_params():
        value = device.values[0]
        if device.marks:  # unusable here: one skip that says why, not one per op and dtype
            params.append(pytest.param(value, items[0], marks=device.marks, id=f"{value}-all"))
            continue
        for item in items:
            marks = device.marks
            if isinstance(item, _PARAM):  # an item with marks of its own (an xfail)
                item, marks = item.values[0], [*marks, *item.marks]
            name = item_name(item)
            chosen = every_item is not None and every_item(value, item)
            if chosen or every_op(value, full) or in_share(name):
                params.append(pytest.param(value, item, marks=marks, id=f"{value}-{name}"))
    return params


def skip_unless_device(device_type: str):
    """Decorator for tests that need one particular device type."""
    reason = unavailable_reason(device_type)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames and not _parametrized(metafunc, "device"):
        metafunc.parametrize("device", device_params())


def _parametrized(metafunc, name: str) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A numpy Generator seeded from the test's id: stable across runs, workers and orders."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture(autouse=True)
def _seeded_ember(request):
    """ember's default generator is seeded from the OS at import (as PyTorch's); each test starts
    from a seed of its own id instead, so a failure repeats whatever ran before it."""
    ember.manual_seed(zlib.crc32(request.node.nodeid.encode()))


REFREEZE_EVERY = 2000  # tests between re-freezes of what the run has accumulated
_FINISHED = itertools.count(1)


def pytest_collection_finish(session):
    """Freeze what collection made (torch's OpInfo database, half a million objects, the
    tests' parameters) out of the cyclic collector: each full collection walked it all, 1.8 s
    a time, some forty times a worker, a tenth of the suite's time. Frozen objects stay alive
    as they would anyway; cycles among them are simply never looked for."""
    gc.collect()
    gc.freeze()


def pytest_runtest_logfinish(nodeid, location):
    """What later tests leave alive (caches, lazily imported modules) is frozen too, now and
    then, after a collection so that no garbage is frozen with it."""
    if next(_FINISHED) % REFREEZE_EVERY == 0:
        gc.collect()
        gc.freeze()
