"""Autocast with ember.compile: a region inside a compiled function and a compiled module called
inside a region give PyTorch's eager autocast dtypes and ember's eager values, and gradients
flow back to the float32 parameters, as the issue asks of autocast once compile exists."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _models():
    ember.manual_seed(0)
    ours = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.GELU(), ember.nn.Linear(16, 4))
    theirs = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        for mine, other in zip(ours.parameters(), theirs.parameters(), strict=True):
            other.copy_(torch.from_numpy(mine.detach().numpy()))
    return ours, theirs


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_region_inside_a_compiled_function(dtype):
    ours, theirs = _models()
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)

    def step(lib, model, x):
        with lib.autocast("cpu", dtype=getattr(lib, dtype)):
            hidden = model(x)
            return hidden, hidden.float().softmax(-1)

    compiled = ember.compile(lambda t: step(ember, ours, t))
    got_hidden, got = compiled(ember.from_numpy(x))
    eager_hidden, eager = step(ember, ours, ember.from_numpy(x))
    np.testing.assert_array_equal(
        got_hidden.detach().float().numpy(), eager_hidden.detach().float().numpy()
    )
    want_hidden, want = step(torch, theirs, torch.from_numpy(x))
    assert str(got_hidden.dtype).split(".")[1] == str(want_hidden.dtype).split(".")[1] == dtype
    assert got.dtype == eager.dtype == ember.float32
    np.testing.assert_array_equal(got.detach().numpy(), eager.detach().numpy())
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=0.05, atol=0.02)


def test_compiled_module_inside_a_region_trains_the_float32_weights():
    ours, _ = _models()
    compiled = ember.compile(ours)
    x = ember.randn(5, 8)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        out = compiled(x)
        eager = ours(x)
    assert out.dtype == eager.dtype == ember.bfloat16
    np.testing.assert_array_equal(out.detach().float().numpy(), eager.detach().float().numpy())
    out.float().sum().backward()
    weight = ours[0].weight
    assert weight.dtype == weight.grad.dtype == ember.float32
    assert float(weight.grad.abs().sum()) > 0
