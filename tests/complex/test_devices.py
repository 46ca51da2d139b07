"""Complex tensors on devices other than the CPU: their complex kernels are the CPU's, reached
through the declared CPU fallback (counted, warned once per op), so values are right, never
silently wrong."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.registry import FALLBACK_COUNTS

from ..conftest import available_device_types

# "ref" is the example plugin: its "*" kernels (any dtype) predate complex scalars, so it is
# not a complex backend; the real device plugins have no complex kernels and fall back.
OTHERS = [d for d in available_device_types() if d not in ("cpu", "ref")]


@pytest.mark.skipif(not OTHERS, reason="no device other than the CPU")
@pytest.mark.parametrize("device", OTHERS)
def test_complex_ops_on_other_devices_fall_back_to_the_cpu(device):
    values = np.array([[1 + 2j, 3 - 1j], [0.5j, -2]])
    before = FALLBACK_COUNTS["mul"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = ember.tensor(values, dtype=ember.complex64, device=device)
        got = {
            "mul": z * z + 1j,
            "mm": z @ z,
            "sum": z.sum(0),
            "abs": z.abs(),
            "real": z.real,
            "ones": ember.ones(2, dtype=ember.complex64, device=device),
        }
    t = torch.tensor(values, dtype=torch.complex64)
    want = {
        "mul": t * t + 1j,
        "mm": t @ t,
        "sum": t.sum(0),
        "abs": t.abs(),
        "real": t.real,
        "ones": torch.ones(2, dtype=torch.complex64),
    }
    for name, value in got.items():
        assert value.device.type == device, name
        np.testing.assert_allclose(value.cpu().numpy(), want[name].numpy(), rtol=1e-6)
    assert FALLBACK_COUNTS["mul"] > before
