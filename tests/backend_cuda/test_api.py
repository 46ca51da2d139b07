"""``ember.cuda.*`` over the emulated runtime (EMBER_CUDA_EMULATOR=1): streams, events, the
device context manager, memory statistics and out-of-memory, seeding, pinned copies, switches.

What this proves: the device-independent logic of the runtime (ember_backend_gpu/gpu.py:
current device and streams per thread, which native stream a launch or copy is issued on,
when a copy is asynchronous, the status word, scratch) and the core's side (ember/_accelerator.py,
the caching allocator, ember.backends) behave as specified. What it cannot prove: anything a
GPU does (real asynchrony, timing, the pycuda hooks in runtime.py); the emulator's events time
the host clock. Those wait for a run with a GPU (docs/backend_cuda.md).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import ember
from ember.dispatcher.devices import REGISTRY

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator"),
    pytest.mark.usefixtures("emulated_cuda"),
]


@pytest.fixture
def runtime():
    return REGISTRY.backend("cuda").runtime


@pytest.fixture
def spy(runtime, monkeypatch):
    """Records (hook, native stream) of every launch and copy the runtime issues."""
    calls = []
    call, copy = runtime._call, runtime._copy

    def spy_call(function, grid, block, stream, args, shared):
        calls.append(("launch", stream))
        return call(function, grid, block, stream, args, shared)

    def spy_copy(kind, dst, src, nbytes, stream):
        calls.append((kind, stream))
        return copy(kind, dst, src, nbytes, stream)

    monkeypatch.setattr(runtime, "_call", spy_call)
    monkeypatch.setattr(runtime, "_copy", spy_copy)
    return calls


def test_streams_route_launches_and_nest(runtime, spy):
    default = ember.cuda.current_stream()
    assert default == ember.cuda.default_stream() and default.cuda_stream == 0
    s = ember.cuda.Stream()
    x = ember.ones(8, device="cuda")
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        inner = ember.cuda.Stream()
        with ember.cuda.stream(inner):
            assert ember.cuda.current_stream() == inner
        assert ember.cuda.current_stream() == s
        spy.clear()
        y = x + 1
    assert ember.cuda.current_stream() == default
    assert spy and all(stream is s.native for _, stream in spy)
    spy.clear()
    (y * 2).cpu()
    assert ("launch", None) in spy  # back on the default stream
    assert s.query() and default.query()
    s.synchronize()
    assert s != inner and len({s, inner, default}) == 3


def test_events_record_wait_and_time():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    assert start.query()  # unrecorded events are complete, as in PyTorch
    with pytest.raises(RuntimeError, match="recorded"):
        start.elapsed_time(end)
    start.record()
    ember.ones(4, device="cuda").sum()
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0.0
    s = ember.cuda.Stream()
    s.wait_event(end)
    s.wait_stream(ember.cuda.current_stream())
    plain = ember.cuda.current_stream().record_event()
    with pytest.raises(RuntimeError, match="enable_timing"):
        plain.elapsed_time(end)


def test_device_context_manager_and_properties():
    assert ember.cuda.device_count() == 1 and ember.cuda.current_device() == 0
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    with pytest.raises(RuntimeError, match="not available"):
        ember.cuda.set_device(1)
    assert ember.cuda.current_device() == 0
    props = ember.cuda.get_device_properties(0)
    assert (props.major, props.minor) == ember.cuda.get_device_capability() == (8, 0)
    ember.cuda.synchronize()


def test_manual_seed_all_repeats_streams():
    ember.cuda.manual_seed_all(7)
    a = ember.rand(100, device="cuda").cpu().numpy()
    ember.cuda.manual_seed_all(7)
    b = ember.rand(100, device="cuda").cpu().numpy()
    assert np.array_equal(a, b) and ember.cuda.initial_seed() == 7


def test_memory_stats_summary_and_empty_cache():
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() == base + 4 * (1 << 20)
    assert ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()
    reserved = ember.cuda.memory_reserved()
    assert reserved >= ember.cuda.memory_allocated()
    del x
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.memory_reserved() == reserved  # cached, not returned
    assert ember.cuda.max_memory_allocated() >= base + 4 * (1 << 20)
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() < reserved
    assert "memory summary" in ember.cuda.memory_summary()
    stats = ember.cuda.memory_stats()
    assert stats["allocated_bytes.current"] == ember.cuda.memory_allocated()


def test_out_of_memory_frees_the_cache_retries_then_raises(runtime, monkeypatch):
    alloc, calls = runtime.alloc, []

    def refusing(nbytes, index=None):
        calls.append(nbytes)
        if nbytes >= 1 << 30:
            raise MemoryError("emulated device full")
        return alloc(nbytes, index)

    monkeypatch.setattr(runtime, "alloc", refusing)
    with pytest.raises(ember.cuda.OutOfMemoryError, match="allocated") as info:
        ember.empty(1 << 28, device="cuda")  # 1 GiB of float32
    assert "reserved" in str(info.value)
    assert sum(n >= 1 << 30 for n in calls) == 2  # tried, freed the cache, retried once


def test_pinned_copies_are_asynchronous_only_from_pinned_memory(spy):
    x = ember.arange(16.0)
    pinned = x.pin_memory()
    assert pinned.is_pinned() and not x.is_pinned()
    spy.clear()
    on_device = x.to("cuda", non_blocking=True)  # pageable: synchronous whatever was asked
    assert spy == [("htod", False)]
    spy.clear()
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        on_device = pinned.to("cuda", non_blocking=True)
        back = on_device.to("cpu", non_blocking=True)
    assert spy == [("htod", s.native), ("dtoh", s.native)]
    s.synchronize()
    assert back.is_pinned() and back.tolist() == x.tolist()
    spy.clear()
    assert on_device.cpu().tolist() == x.tolist()
    assert spy == [("dtoh", False)]


def test_allow_tf32_switch_reaches_the_runtime(runtime):
    assert ember.backends.cuda.matmul.allow_tf32 is False  # PyTorch's default since 1.12
    try:
        ember.backends.cuda.matmul.allow_tf32 = True
        assert runtime.flags["matmul.allow_tf32"] is True
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    assert runtime.flags["matmul.allow_tf32"] is False
    with pytest.raises(AttributeError, match="no switch"):
        ember.backends.cuda.matmul.allow_fp8 = True
    ember.backends.cudnn.benchmark = True  # accepted for PyTorch scripts; no cuDNN here
    assert ember.backends.cudnn.benchmark is True


def test_kernel_errors_come_back_through_the_status_word(runtime):
    x = ember.arange(4.0, device="cuda")
    with pytest.raises(IndexError):
        x.gather(0, ember.tensor([7], device="cuda"))
    assert runtime.read_status(0) == 0  # read and reset: the next op starts clean
    assert x.gather(0, ember.tensor([3], device="cuda")).tolist() == [3.0]
