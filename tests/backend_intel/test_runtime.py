"""The xpu runtime: device API, memory through the caching allocator, transfers, programs."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember
from ember._dtype import ALL
from ember.dispatcher.devices import REGISTRY

DTYPES = ALL  # every dtype, in code order


def _runtime():
    return REGISTRY.backend("xpu").runtime


def test_device_api():
    assert ember.xpu.is_available()
    assert ember.xpu.unavailable_reason() is None
    assert ember.xpu.device_count() >= 1
    assert ember.xpu.get_device_name(0)
    props = ember.xpu.get_device_properties(0)
    assert props.total_memory > 0 and props.multi_processor_count > 0
    assert props.platform and isinstance(props.has_fp64, bool)
    major, _minor = ember.xpu.get_device_capability(0)
    assert major >= 1
    free, total = ember.xpu.mem_get_info(0)
    assert 0 < free <= total
    ember.xpu.synchronize()
    x = ember.ones(3, device="xpu")
    assert x.device == ember.device("xpu", 0) and x.is_xpu if hasattr(x, "is_xpu") else True


def test_memory_goes_through_the_caching_allocator():
    ember.xpu.synchronize()
    before = ember.xpu.memory_allocated()
    x = ember.empty(1 << 20, device="xpu")
    assert ember.xpu.memory_allocated() >= before + 4 * (1 << 20)
    assert ember.xpu.max_memory_allocated() >= ember.xpu.memory_allocated()
    assert "xpu:0" in ember.xpu.memory_summary()
    del x
    assert ember.xpu.memory_allocated() == before
    reserved = ember.xpu.memory_reserved()
    ember.xpu.empty_cache()
    assert ember.xpu.memory_reserved() <= reserved


def test_out_of_memory_is_a_clear_error():
    total = _runtime().device_properties(0).total_memory
    with pytest.raises(ember.xpu.OutOfMemoryError, match="xpu:0 out of memory"):
        ember.empty(2 * total // 4, dtype=ember.float32, device="xpu")
    assert (ember.ones(2, device="xpu") + 1).tolist() == [2.0, 2.0]  # still usable


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_round_trip_keeps_every_bit(dtype, rng):
    raw = rng.integers(0, 256, size=64 * dtype.itemsize, dtype=np.uint8)
    if dtype is ember.bool:
        raw = (raw & 1).astype(np.uint8)
    np_dtype = ml_dtypes.bfloat16 if dtype is ember.bfloat16 else dtype.np
    values = raw.view(np_dtype).reshape(8, 8)
    back = ember.from_numpy(values).to("xpu").cpu().numpy()
    assert back.dtype == values.dtype
    assert back.tobytes() == values.tobytes()


def test_views_on_device_memory(rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    x = ember.from_numpy(a).to("xpu")
    for view, want in [
        (x[1:, ::2], a[1:, ::2]),
        (x.t(), a.T),
        (x[2], a[2]),
        (x[:, 3], a[:, 3]),
        (x.view(4, 12)[1:3], a.reshape(4, 12)[1:3]),
    ]:
        np.testing.assert_array_equal(view.cpu().numpy(), want)
        np.testing.assert_array_equal((view * 1).cpu().numpy(), want)
        assert view._storage is x._storage


def test_copies_between_host_and_device(rng):
    a = rng.standard_normal((5, 7)).astype(np.float32)
    host = ember.from_numpy(a.copy())
    dev = host.to("xpu")
    host.add_(100)  # the upload was staged: changing the source afterwards changes nothing
    np.testing.assert_array_equal(dev.cpu().numpy(), a)
    target = ember.zeros(7, 5, device="xpu")
    target.copy_(ember.from_numpy(a).t())  # strided host source into a device tensor
    np.testing.assert_array_equal(target.cpu().numpy(), a.T)
    back = ember.zeros(5, 7)
    back.copy_(dev)
    np.testing.assert_array_equal(back.numpy(), a)
    as_half = dev.to(ember.float16)
    np.testing.assert_array_equal(as_half.cpu().numpy(), a.astype(np.float16))
    assert dev.to("xpu") is dev and dev.cpu().device == ember.device("cpu")


def test_copy_between_overlapping_ranges():
    runtime = _runtime()
    x = ember.arange(16, dtype=ember.float32, device="xpu")
    buffer, base = x._storage.handle, x._storage.byte_offset
    runtime.copy_between(buffer, base + 8, buffer, base, 32, 0)
    assert x.cpu().tolist()[:12] == [0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 10, 11]


def test_events_time_device_work():
    start, end = ember.xpu.Event(enable_timing=True), ember.xpu.Event(enable_timing=True)
    x = ember.ones(1 << 16, device="xpu")
    start.record()
    (x * 2).sum()
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0


def test_programs_are_built_once():
    dev = _runtime().devices[0]
    x = ember.ones(10, device="xpu")
    y = ember.ones(3, 4, device="xpu").t()
    for _ in range(2):
        ((x * 2 + 1).exp().sum(), (y + 1).sum(0), y @ y.t(), x.sort())
    ember.xpu.synchronize()
    builds = dev.programs.builds
    for _ in range(3):
        ((x * 2 + 1).exp().sum(), (y + 1).sum(0), y @ y.t(), x.sort())
    ember.xpu.synchronize()
    assert dev.programs.builds == builds


def test_build_options_from_the_environment(monkeypatch):
    """EMBER_XPU_BUILD_OPTIONS reaches every program's build (the suite builds unoptimized:
    tests/conftest.py); a program using a macro it defines compiles only with it."""
    from ember_backend_intel.programs import OPTIONS_ENV, Programs

    runtime = _runtime()
    dev = runtime.devices[0]
    monkeypatch.setenv(OPTIONS_ENV, "-DEMBER_TEST_VALUE=7  -cl-opt-disable")
    programs = Programs(runtime._cl, dev)
    assert programs.options[-2:] == ["-DEMBER_TEST_VALUE=7", "-cl-opt-disable"]
    source = "__kernel void seven(__global int* a) { a[0] = EMBER_TEST_VALUE; }"
    assert "seven" in programs.get(("test-only", "options"), lambda: source)
    monkeypatch.delenv(OPTIONS_ENV)
    with pytest.raises(RuntimeError, match="compiling the OpenCL program"):
        Programs(runtime._cl, dev).get(("test-only", "options"), lambda: source)


def test_float64_needs_the_extension(monkeypatch):
    dev = _runtime().devices[0]
    monkeypatch.setattr(dev, "fp64", False)
    with pytest.raises(TypeError, match=r"no float64.*cl_khr_fp64"):
        dev.programs.get(("test-only", "f64"), lambda: "")


def test_programs_without_float64(monkeypatch):
    """An elementwise op's program holds every dtype's kernels, a copy program every target's;
    on a device without doubles they leave out float64's (their source would not compile there)
    and float64 operands get the clear error."""
    from ember_backend_intel.kernels import elementwise
    from ember_backend_intel.programs import Programs

    runtime = _runtime()
    dev = runtime.devices[0]
    monkeypatch.setattr(dev, "fp64", False)
    monkeypatch.setattr(dev, "programs", Programs(runtime._cl, dev))  # built without EM_FP64
    add = elementwise.build(runtime)["add"]  # fresh glue: nothing compiled yet
    x = ember.ones(4, device="xpu")
    out = ember.empty(4, device="xpu")
    add["float32"](out, x, x)
    assert out.cpu().tolist() == [2.0] * 4
    kernels = dev.programs.get(("ew", "add"), lambda: pytest.fail("built twice"))
    assert "ew_f32" in kernels and "ew_strided_bf16" in kernels
    assert not [name for name in kernels if name.endswith("f64")]
    wide = ember.empty(4, dtype=ember.float64, device="xpu")  # memory only, no kernel
    with pytest.raises(TypeError, match=r"^add: xpu:0 .* no float64.*cl_khr_fp64"):
        add["float64"](wide, wide, wide)
    assert x.to(ember.float16).cpu().tolist() == [1.0] * 4  # a copy program from float32
    copies = dev.programs.get(("copy", "f32"), lambda: pytest.fail("built twice"))
    assert "copy_to_f16" in copies and "copy_to_f64" not in copies
    with pytest.raises(TypeError, match=r"^copy_: xpu:0 .* no float64.*cl_khr_fp64"):
        wide.copy_(x)
