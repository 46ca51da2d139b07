"""xpu's Philox fills against the CPU's (docs/random.md): one seed, one stream on every device.
Uniform and integer fills must match bit for bit; normal fills to the accuracy of the device's
log/sqrt/sin/cos."""

from __future__ import annotations

import numpy as np
import pytest

import ember

FLOATS = [ember.float16, ember.bfloat16, ember.float32, ember.float64]
ALL = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, *FLOATS]
SHAPES = [(1,), (7,), (5, 13), (1000, 3)]


def _both(fill, shape, dtype):
    """``fill(tensor)`` on a fresh CPU and a fresh xpu tensor from the same generator state."""
    out = []
    for device in ("cpu", "xpu"):
        gen = ember.Generator(device).manual_seed(1234)
        t = ember.empty(shape, dtype=dtype, device=device)
        fill(t, gen)
        out.append(t.cpu().numpy())
    return out


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_uniform_is_bit_identical(dtype, shape):
    cpu, xpu = _both(lambda t, g: t.uniform_(-2.0, 3.0, generator=g), shape, dtype)
    assert cpu.tobytes() == xpu.tobytes()


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
@pytest.mark.parametrize("bounds", [(0, 2), (-50, 100), (0, 1 << 40)], ids=str)
def test_integers_are_bit_identical(dtype, bounds):
    if dtype in (ember.bool, ember.uint8, ember.int8) and bounds[1] > 2:
        bounds = (0, 2)
    if dtype in (ember.int16, ember.int32, *FLOATS) and bounds[1] > 1 << 15:
        bounds = (-50, 100)
    cpu, xpu = _both(lambda t, g: t.random_(*bounds, generator=g), (33, 5), dtype)
    assert cpu.tobytes() == xpu.tobytes()


def test_wide_integer_draws_are_bit_identical():
    cpu, xpu = _both(lambda t, g: t.random_(-(1 << 50), 1 << 50, generator=g), (77,), ember.int64)
    assert cpu.tobytes() == xpu.tobytes()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_normal_is_close(dtype):
    cpu, xpu = _both(lambda t, g: t.normal_(0.5, 2.0, generator=g), (999,), dtype)
    tolerance = {ember.float16: 4e-3, ember.bfloat16: 2e-2}.get(dtype, 1e-5)
    np.testing.assert_allclose(
        xpu.astype(np.float64), cpu.astype(np.float64), rtol=tolerance, atol=tolerance
    )


def test_strided_outputs_follow_logical_order():
    for device in ("cpu", "xpu"):
        ember.manual_seed(7)
        t = ember.empty(6, 9, device=device).t()[::2]
        t.uniform_()
        if device == "cpu":
            want = t.numpy().copy()
    assert t.cpu().numpy().tobytes() == want.tobytes()


def test_factories_agree_with_the_cpu():
    values = []
    for device in ("cpu", "xpu"):
        ember.manual_seed(99)
        values.append((ember.rand(4, 4, device=device), ember.randint(0, 10, (6,), device=device)))
    for cpu, xpu in zip(*values):
        assert cpu.numpy().tobytes() == xpu.cpu().numpy().tobytes()
