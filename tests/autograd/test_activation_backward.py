"""The activations' fused backward rows (issue 20) against PyTorch's aten ops, their use by the
activations' formulas, and double backward through them (gradgradcheck in float64)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SPECIALS = [0.0, -0.0, 1e-30, -1e-30, 14.9, -14.9, 15.0, -15.0, 40.0, -40.0, 1e4, -1e4]
# (ember call, torch call) on (grad_output, second operand); the second operand is the forward's
# input for gelu, silu and threshold, its output for sigmoid and tanh
ROWS = {
    "gelu_backward": (
        lambda g, x: ember.ops.gelu_backward(g, x),
        lambda g, x: torch.ops.aten.gelu_backward(g, x),
    ),
    "gelu_backward_tanh": (
        lambda g, x: ember.ops.gelu_backward(g, x, approximate="tanh"),
        lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
    ),
    "silu_backward": (ember.ops.silu_backward, torch.ops.aten.silu_backward),
    "sigmoid_backward": (ember.ops.sigmoid_backward, torch.ops.aten.sigmoid_backward),
    "tanh_backward": (ember.ops.tanh_backward, torch.ops.aten.tanh_backward),
    "threshold_backward": (
        lambda g, x: ember.ops.threshold_backward(g, x, 0.25),
        lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.25),
    ),
}
OUTPUT_OF = {"sigmoid_backward": np.tanh, "tanh_backward": np.tanh}  # values in (-1, 1)
# the CPU's fused float32 kernels; devices that run the decompositions (chains of float32 ops,
# 1 - t^2 cancelling) are held to the row's tolerance (activation_backward.py)
TOLERANCE = {np.float32: (2e-6, 1e-6), np.float64: (1e-12, 1e-14)}
TOLERANCE_DECOMPOSED = {np.float32: (2e-5, 5e-5), np.float64: (1e-10, 1e-12)}


def _operands(name, dtype, n, rng):
    x = np.concatenate([rng.standard_normal(n) * 4, SPECIALS]).astype(dtype)
    if name in OUTPUT_OF:
        x = OUTPUT_OF[name](x).astype(dtype)
    return rng.standard_normal(x.size).astype(dtype), x


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", list(ROWS))
def test_row_matches_aten(name, dtype, device, rng):
    """Values against torch.ops.aten in float64 on the same inputs (float32 within 2e-6
    relative, 1e-6 absolute where the result crosses zero or vanishes)."""
    ours, theirs = ROWS[name]
    g, x = _operands(name, dtype, 5000, rng)
    got = ours(ember.from_numpy(g).to(device), ember.from_numpy(x).to(device)).cpu().numpy()
    want = theirs(torch.from_numpy(g).double(), torch.from_numpy(x).double()).numpy()
    rtol, atol = (TOLERANCE if device == "cpu" else TOLERANCE_DECOMPOSED)[dtype]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32_against_float64_on_1m_samples(approximate, rng):
    """The float32 kernels of gelu and gelu_backward against PyTorch's float64 on 1M samples
    (normal times 4, and a dense sweep of [-20, 20]); PyTorch's own float32 is the yardstick."""
    x = np.concatenate([rng.standard_normal(1 << 20) * 4, np.linspace(-20, 20, 100_001)])
    x = x.astype(np.float32)
    g = np.ones_like(x)
    x64 = torch.from_numpy(x).double()
    forward = ember.nn.functional.gelu(ember.from_numpy(x), approximate=approximate).numpy()
    backward = ember.ops.gelu_backward(ember.from_numpy(g), ember.from_numpy(x), approximate)
    want_forward = torch.nn.functional.gelu(x64, approximate=approximate).numpy()
    want_backward = torch.ops.aten.gelu_backward(
        torch.ones_like(x64), x64, approximate=approximate
    ).numpy()
    # rtol 1e-6 (float32's 8 ulp), atol 1e-7 where the results cross or approach zero (and
    # where PyTorch's float64 itself cancels: 0.5 x (1 + erf) for x << 0)
    np.testing.assert_allclose(forward, want_forward, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(backward.numpy(), want_backward, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_half_types_through_float32(dtype, approximate, rng):
    """float16 and bfloat16 compute in float32 and round once, as PyTorch's (an ulp of the
    half type apart at most, where the float32 results straddle a rounding boundary)."""
    rtol = {"float16": 1e-3, "bfloat16": 8e-3}[dtype]
    x = (rng.standard_normal(4096) * 4).astype(np.float32)
    g = rng.standard_normal(4096).astype(np.float32)
    e_dtype, t_dtype = getattr(ember, dtype), getattr(torch, dtype)
    ex, eg = (ember.from_numpy(a).to(e_dtype) for a in (x, g))
    tx, tg = (torch.from_numpy(a).to(t_dtype) for a in (x, g))
    got = ember.nn.functional.gelu(ex, approximate=approximate).float().numpy()
    want = torch.nn.functional.gelu(tx, approximate=approximate).float().numpy()
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-5)
    got_g = ember.ops.gelu_backward(eg, ex, approximate=approximate).float().numpy()
    want_g = torch.ops.aten.gelu_backward(tg, tx, approximate=approximate).float().numpy()
    np.testing.assert_allclose(got_g, want_g, rtol=rtol, atol=1e-5)


# activation -> (call, the backward row its formula must record)
ACTIVATIONS = {
    "gelu": (lambda t: ember.nn.functional.gelu(t), "gelu_backward"),
    "gelu_tanh": (lambda t: ember.nn.functional.gelu(t, approximate="tanh"), "gelu_backward"),
    "silu": (lambda t: ember.nn.functional.silu(t), "silu_backward"),
    "sigmoid": (ember.sigmoid, "sigmoid_backward"),
    "tanh": (ember.tanh, "tanh_backward"),
    "relu": (ember.relu, "threshold_backward"),
    "softmax": (lambda t: ember.softmax(t, -1), "_softmax_backward_data"),
    "log_softmax": (lambda t: ember.log_softmax(t, -1), "_log_softmax_backward_data"),
}
TORCH_ACTIVATIONS = {
    "gelu": lambda t: torch.nn.functional.gelu(t),
    "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "softmax": lambda t: torch.softmax(t, -1),
    "log_softmax": lambda t: torch.log_softmax(t, -1),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_backward_is_the_row(name, rng, monkeypatch):
    """The formula runs the fused row once (counted), and its gradient is PyTorch's."""
    call, row = ACTIVATIONS[name]
    op = getattr(ember.ops, row)
    calls = []
    runner = op.runner
    monkeypatch.setattr(op, "runner", lambda *args: calls.append(1) or runner(*args))
    x = (rng.standard_normal((8, 16)) * 3).astype(np.float32)
    g = rng.standard_normal((8, 16)).astype(np.float32)
    ex = ember.from_numpy(x).requires_grad_()
    (grad,) = ember.autograd.grad(call(ex), ex, ember.from_numpy(g))
    tx = torch.from_numpy(x).requires_grad_()
    (want,) = torch.autograd.grad(TORCH_ACTIVATIONS[name](tx), tx, torch.from_numpy(g))
    assert calls == [1]
    np.testing.assert_allclose(grad.numpy(), want.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_double_backward_through_the_rows(name, device, rng):
    """gradcheck and gradgradcheck (float64) of each activation, whose backward is the row."""
    call, _ = ACTIVATIONS[name]
    x = rng.standard_normal((3, 5)) * 2
    if name == "relu":
        x = np.where(np.abs(x) < 0.1, 0.5, x)  # away from the kink
    ex = ember.from_numpy(x).to(device).requires_grad_()
    assert ember.autograd.gradcheck(call, (ex,))
    assert ember.autograd.gradgradcheck(call, (ex,))


BACKWARD_CALLS = {
    "gelu_backward": lambda g, x: ember.ops.gelu_backward(g, x),
    "gelu_backward_tanh": lambda g, x: ember.ops.gelu_backward(g, x, approximate="tanh"),
    "silu_backward": ember.ops.silu_backward,
    "sigmoid_backward": ember.ops.sigmoid_backward,
    "tanh_backward": ember.ops.tanh_backward,
    "threshold_backward": lambda g, x: ember.ops.threshold_backward(g, x, 0.25),
    "_softmax_backward_data": lambda g, y: ember._softmax_backward_data(g, y, 1, ember.float64),
    "_log_softmax_backward_data": lambda g, y: ember._log_softmax_backward_data(
        g, y, 1, ember.float64
    ),
}


@pytest.mark.parametrize("name", list(BACKWARD_CALLS))
def test_backward_rows_gradcheck(name, device, rng):
    """The rows' own formulas (both operands), by finite differences in float64."""
    g = rng.standard_normal((3, 4))
    second = rng.uniform(-0.9, 0.9, (3, 4)) if name in OUTPUT_OF else rng.standard_normal((3, 4))
    if name == "threshold_backward":
        second = np.where(np.abs(second - 0.25) < 0.1, 1.0, second)
    args = [ember.from_numpy(a).to(device).requires_grad_() for a in (g, second)]
    assert ember.autograd.gradcheck(BACKWARD_CALLS[name], args)


def test_gelu_backward_refuses_unknown_form():
    with pytest.raises(RuntimeError, match="approximate"):
        ember.ops.gelu_backward(ember.ones(3), ember.ones(3), approximate="fast")
