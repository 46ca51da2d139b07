"""The device check before every kernel, with a second device from an in-memory plugin."""

from __future__ import annotations

import warnings

import pytest
from plugin_fakes import RefPlugin

import ember
from ember.dispatcher.registry import PerformanceWarning


@pytest.fixture
def ref(plugins):
    plugins(("ref", RefPlugin()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)  # arithmetic runs through fallback
        yield


MIXED = [
    ("add", lambda r, c: r + c, "ref:0 and cpu"),
    ("add", lambda r, c: c + r, "cpu and ref:0"),
    ("add_", lambda r, c: r.add_(c), "ref:0 and cpu"),
    ("eq", lambda r, c: r == c, "ref:0 and cpu"),
    ("where", lambda r, c: ember.where(c > 0, r, c), "cpu and ref:0"),
    ("lerp", lambda r, c: ember.lerp(r, c, 0.5), "ref:0 and cpu"),
    ("clamp", lambda r, c: ember.clamp(r, c), "ref:0 and cpu"),
    ("cat", lambda r, c: ember.cat([r, c]), "ref:0 and cpu"),
    ("add", lambda r, c: c + ember.tensor(2.0, device="ref"), "cpu and ref:0"),
]


@pytest.mark.parametrize(
    "op, call, devices", MIXED, ids=[f"{m[0]}-{i}" for i, m in enumerate(MIXED)]
)
def test_mixed_devices_are_refused(ref, op, call, devices):
    r, c = ember.ones(2, device="ref"), ember.ones(2)
    with pytest.raises(RuntimeError) as info:
        call(r, c)
    assert str(info.value) == (
        f"{op}: Expected all tensors to be on the same device, but found at least two devices, "
        f"{devices}!"
    )


def test_zero_dim_cpu_tensors_mix_with_any_device(ref):
    r = ember.ones(2, device="ref")
    out = r + ember.tensor(2.0)
    assert out.device == "ref:0" and out.tolist() == [3.0, 3.0]
    r.add_(ember.tensor(1.0))
    assert r.tolist() == [2.0, 2.0]
    assert ember.where(r > 0, ember.tensor(5.0), r).device == "ref:0"


def test_copies_cross_devices(ref):
    r, c = ember.ones(2, 3, device="ref"), ember.arange(6.0).view(2, 3)
    r.copy_(c.T.T + 1)
    assert r.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    c.copy_(r)  # and back, with a cast on the way
    assert c.tolist() == r.tolist()
    ints = ember.zeros(2, 3, dtype=ember.int64)
    ints.copy_(r.T.T)
    assert ints.tolist() == [[1, 2, 3], [4, 5, 6]]
    broadcast = ember.zeros(2, 3, device="ref")
    broadcast.copy_(ember.arange(3.0))  # cross-device copy with broadcasting
    assert broadcast.tolist() == [[0.0, 1.0, 2.0]] * 2


def test_to_and_from_the_device(ref):
    c = ember.arange(6).view(2, 3)
    r = c.T.to("ref")
    assert r.device == "ref:0" and r.is_contiguous() and r.tolist() == c.T.tolist()
    assert r.to("ref") is r and r.to(ember.device("ref", 0)) is r
    back = r.to("cpu", ember.float64)
    assert back.device == "cpu" and back.dtype is ember.float64
    assert r.cpu().tolist() == [[0, 3], [1, 4], [2, 5]]
    assert repr(r) == "tensor([[0, 3],\n        [1, 4],\n        [2, 5]], device='ref:0')"
    assert r.type() == "ember.ref.LongTensor"


def test_numpy_of_another_device_says_how(ref):
    r = ember.ones(2, device="ref")
    with pytest.raises(TypeError, match=r"can't convert ref:0 tensor to numpy. Use Tensor.cpu\(\)"):
        r.numpy()
    assert r.numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(BufferError, match="only CPU tensors can be exported"):
        r.__dlpack__()
