"""PyTorch as an oracle: run the same computation in ember and in torch from the same numpy
values, and compare results and gradients. Tests importing this skip when torch is missing."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def host(t) -> np.ndarray | None:
    """An ember or torch tensor (or None) as a numpy array."""
    if t is None:
        return None
    if isinstance(t, ember.Tensor):
        return t.detach().cpu().numpy()
    return t.detach().cpu().numpy()


def leaves(arrays, device, requires_grad=True):
    """The same values as ember leaves on ``device`` and as torch leaves (CPU)."""
    ours = [
        ember.tensor(a, device=device).requires_grad_(requires_grad and a.dtype.kind == "f")
        for a in arrays
    ]
    theirs = [torch.tensor(a).requires_grad_(requires_grad and a.dtype.kind == "f") for a in arrays]
    return ours, theirs


def assert_close(got, want, what: str = "", rtol=1e-6, atol=1e-8) -> None:
    got, want = host(got), host(want)
    assert (got is None) == (want is None), f"{what}: ember gives {got}, torch gives {want}"
    if got is not None:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


def compare(fn, arrays, device, grad_output=None, rtol=1e-6, atol=1e-8, what: str = ""):
    """``fn(lib, *tensors)`` in both frameworks: same outputs, same input gradients for the same
    output gradient (random unless given). Returns the ember leaves."""
    ours, theirs = leaves(arrays, device)
    out_e, out_t = fn(ember, *ours), fn(torch, *theirs)
    assert_close(out_e, out_t, f"{what} output", rtol, atol)
    if grad_output is None:
        grad_output = np.random.default_rng(0).standard_normal(tuple(out_t.shape))
    g = np.asarray(grad_output, dtype=host(out_t).dtype)
    out_e.backward(ember.tensor(g, device=device))
    out_t.backward(torch.tensor(g))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if b.requires_grad:
            assert_close(a.grad, b.grad, f"{what} grad of input {i}", rtol, atol)
    return ours
