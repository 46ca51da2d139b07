"""Compiled traced optimizer steps as one multi-tensor kernel (compiler/multi_tensor.py, the CPU
plugin's fused_multi.py): the parameters and states are updated in place, with no concatenation
or copy back, over tensors of any size (chunked, OpenMP from 32k elements), and the 20-step
float64 trajectories equal eager ember's and PyTorch's; a gradient that is not contiguous takes
the concatenating replay for that call."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

# sizes around the kernel's chunk (8192) and OpenMP threshold (32768 elements in all)
SHAPES = [(3,), (181, 130), (5, 4), (1,), (97, 101)]
CASES = [
    ("RMSprop", {"momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("Adagrad", {"lr_decay": 0.01}),
    ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("ASGD", {"t0": 5}),
    # its comparisons' bools stay inside the one chain (the sign flips, the step-size factor)
    ("Rprop", {}),
    ("Rprop", {"maximize": True, "etas": (0.4, 1.5), "step_sizes": (1e-4, 0.1)}),
]


def _run(lib, name, kw, dtype, *, compiled=False, steps=20, transposed=False, grad_dtype=None):
    """The parameters after ``steps`` steps with gradients drawn from a seeded generator
    (``transposed``: the square parameter's gradient is a transposed, non-contiguous view;
    ``grad_dtype``: the gradients' dtype, when not the parameters')."""
    rng = np.random.default_rng(1)
    params = [
        lib.tensor(rng.standard_normal(s), dtype=getattr(lib, dtype)).requires_grad_()
        for s in SHAPES
    ]
    opt = getattr(lib.optim, name)(params, lr=0.01, **kw)
    if compiled:
        opt.step = lib.compile(opt.step)
    for _ in range(steps):
        for p, s in zip(params, SHAPES):
            g = lib.tensor(rng.standard_normal(s[::-1]), dtype=getattr(lib, grad_dtype or dtype))
            p.grad = g.t() if transposed and len(s) == 2 else g.reshape(s)
        opt.step()
    return [p.detach().numpy() for p in params], opt


@pytest.mark.parametrize("name,kw", CASES, ids=[n for n, _ in CASES])
def test_multi_tensor_trajectory_matches_eager_and_torch(name, kw):
    got, opt = _run(ember, name, kw, "float64", compiled=True)
    (bucket,) = opt.step._plan.buckets
    assert bucket.multi is not None, bucket.describe()
    assert bucket.multi.description.segments == tuple(int(np.prod(s)) for s in SHAPES)
    eager, _ = _run(ember, name, kw, "float64")
    want, _ = _run(torch, name, kw, "float64")
    for g, e, w in zip(got, eager, want):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_float32_matches_eager():
    got, _ = _run(ember, "Adamax", {"weight_decay": 0.1}, "float32", compiled=True)
    eager, _ = _run(ember, "Adamax", {"weight_decay": 0.1}, "float32")
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name,kw,key", [("RMSprop", {"momentum": 0.9}, "momentum_buffer"), ("Rprop", {}, "prev")]
)
def test_updates_in_place_without_concatenation(monkeypatch, name, kw, key):
    """After the build, a call makes no ``cat`` and no copy: parameters and the state keep their
    storage (the eager step's state entries, views of the bucket's flat buffers)."""
    _, opt = _run(ember, name, kw, "float64", compiled=True, steps=2)
    params = opt.param_groups[0]["params"]
    before = [p.detach().numpy().copy() for p in params]
    state = [opt.state[p][key] for p in params]
    addresses = [t._storage.ptr + t._offset for t in (*params, *state)]
    calls = []
    monkeypatch.setattr(ember, "cat", lambda *a, **k: calls.append("cat"))
    for p in params:
        p.grad = ember.ones_like(p)
    opt.step()
    assert calls == []
    assert [t._storage.ptr + t._offset for t in (*params, *state)] == addresses
    assert all(not np.array_equal(p.detach().numpy(), b) for p, b in zip(params, before))
    assert opt.state[params[0]]["step"] == 3


def test_non_contiguous_gradients_take_the_concatenating_replay():
    got, opt = _run(ember, "Adagrad", {}, "float64", compiled=True, transposed=True)
    assert opt.step._plan.buckets[0].program is not None  # built for those calls
    eager, _ = _run(ember, "Adagrad", {}, "float64", transposed=True)
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_generated_source_chunks_and_threads():
    """The kernel's chunk table covers each tensor in pieces of at most 8192 elements, and a
    bucket of 32k elements or more gets the OpenMP loop."""
    _, opt = _run(ember, "ASGD", {}, "float64", compiled=True, steps=1)
    source = opt.step._plan.buckets[0].multi.kernel.source
    assert "#pragma omp parallel for" in source
    chunks = sum(-(-int(np.prod(s)) // 8192) for s in SHAPES)
    assert f"SEG[{chunks}]" in source


def test_gradients_of_another_dtype_take_the_concatenating_replay():
    """ember lets ``.grad`` take another dtype (PyTorch refuses it): the kernel, which reads the
    parameters' dtype, is not called with them; the replay casts, as the eager step promotes."""
    got, opt = _run(ember, "RMSprop", {}, "float64", compiled=True, grad_dtype="float32")
    assert opt.step._plan.buckets[0].program is not None
    eager, _ = _run(ember, "RMSprop", {}, "float64", grad_dtype="float32")
    for g, e in zip(got, eager):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
