"""layer_norm's backward against PyTorch: on the CPU through the native_layer_norm_backward
kernel (one call: rows for the input's gradient, columns for the weight's and the bias's), on
other devices through the closed form; float64 and float32, every subset of the inputs
requiring grad, and the kernel's parallel sizes."""

from __future__ import annotations

import pytest

import ember

from .oracle import assert_close, to_ember, to_torch

torch = pytest.importorskip("torch")

CASES = [
    # (input shape, normalized_shape): minGPT's (batch, block, n_embd); two normalised dims; rows
    # and columns over EM_PARALLEL_THRESHOLD (OpenMP) with a last partial block of 64 columns
    ((64, 6, 48), (48,)),
    ((3, 4, 5), (4, 5)),
    ((300, 130), (130,)),
    ((5, 2), (2,)),
]
WANTS = [(True, True, True), (True, False, False), (False, True, True), (True, True, False)]


def _grads(lib, convert, x, w, b, g, wants, shape, dtype):
    leaves = [convert(a).to(dtype) for a in (x, w, b)]
    for leaf, want in zip(leaves, wants):
        leaf.requires_grad_(want)
    out = lib.nn.functional.layer_norm(leaves[0], shape, leaves[1], leaves[2])
    out.backward(convert(g).to(dtype))
    return [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("wants", WANTS, ids=str)
def test_layer_norm_gradients(device, rng, dtype, case, wants):
    size, shape = case
    x = rng.standard_normal(size) * 3 + 2  # an offset mean: the centring must be right
    w, b = rng.standard_normal(shape), rng.standard_normal(shape)
    g = rng.standard_normal(size)
    ours = _grads(ember, lambda a: to_ember(a, device), x, w, b, g, wants, shape,
                  getattr(ember, dtype))  # fmt: skip
    theirs = _grads(torch, to_torch, x, w, b, g, wants, shape, getattr(torch, dtype))
    # float32: rows of 2 cancel (gradients ~0.07 from inputs ~5), PyTorch rounds at ~4e-5
    tol = {"float64": (1e-10, 1e-12), "float32": (1e-4, 1e-4)}[dtype]
    for name, a, t, want in zip(("input", "weight", "bias"), ours, theirs, wants):
        assert (a is None) == (not want), f"{name}: gradient {'missing' if want else 'set'}"
        if want:
            assert_close(a, t, name, dtype=dtype, rtol=tol[0], atol=tol[1])


def test_cpu_backward_is_one_kernel_call():
    """The CPU's layer_norm backward runs native_layer_norm and native_layer_norm_backward (the
    statistics, then the three gradients), not the closed form's 22 ops."""
    calls = []
    seen = ember.ops.native_layer_norm_backward.runner

    def counting(op, *args):
        calls.append(op.name)
        return seen(op, *args)

    x = ember.randn(4, 6, 8, requires_grad=True)
    w, b = ember.ones(8, requires_grad=True), ember.zeros(8, requires_grad=True)
    out = ember.nn.functional.layer_norm(x, (8,), w, b)
    ember.ops.native_layer_norm_backward.runner = counting
    try:
        out.sum().backward()
    finally:
        ember.ops.native_layer_norm_backward.runner = seen
    assert calls == ["native_layer_norm_backward"]
    assert x.grad.abs().max().item() < 1e-5  # the sum's gradient through a norm is zero


def test_native_layer_norm_statistics(rng):
    """native_layer_norm's CPU kernel returns PyTorch's mean and rstd (shape and values)."""
    x = rng.standard_normal((5, 3, 7)) + 4
    ours = ember.ops.native_layer_norm(to_ember(x), (3, 7), None, None, 1e-5)
    theirs = torch.native_layer_norm(to_torch(x), (3, 7), None, None, 1e-5)
    for name, a, t in zip(("output", "mean", "rstd"), ours, theirs):
        assert tuple(a.shape) == tuple(t.shape), name
        assert_close(a, t, name, dtype="float64", rtol=1e-12, atol=1e-12)
