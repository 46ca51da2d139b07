"""The backward engine: order, accumulation, graph release, errors, hooks, inputs= and
higher-order gradients, checked against PyTorch where it has the same API."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import grad


def _leaf(values, device, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, device=device).requires_grad_()


def test_grad_follows_every_path_to_an_input(device):
    """Paths that fork and rejoin before reaching the input all contribute (d/dx x*x = 2x, and
    its derivative 2); autograd.grad only runs nodes leading to the inputs."""
    x = _leaf(0.7, device)
    (first,) = grad(x * x, x, create_graph=True)
    assert first.item() == pytest.approx(1.4)
    (second,) = grad(first, x)
    assert second.item() == pytest.approx(2.0)
    y = ember.cat([x.reshape(1).narrow(0, 0, 1), x.reshape(1)]).sum()
    assert grad(y, x)[0].item() == pytest.approx(2.0)


def test_leaf_grads_never_alias_other_tensors(device):
    """add's backward gives both inputs the same tensor, and that tensor is the caller's
    gradient: each leaf must own its .grad, or accumulating into one writes into the others."""
    given = ember.ones(3, device=device)
    x1 = ember.zeros(3, device=device).requires_grad_()
    x2 = ember.zeros(3, device=device).requires_grad_()
    for _ in range(2):
        (x1 + x2).backward(given)
    assert given.tolist() == [1.0, 1.0, 1.0]
    assert x1.grad.tolist() == [2.0, 2.0, 2.0] and x2.grad.tolist() == [2.0, 2.0, 2.0]
    assert x1.grad is not x2.grad and x1.grad is not given
    seen = []
    x3 = ember.zeros(3, device=device).requires_grad_()
    x3.register_hook(lambda g: seen.append(g))
    (x3 * 2).sum().backward()
    (x3 * 2).sum().backward()
    assert [g.tolist() for g in seen] == [[2.0] * 3, [2.0] * 3]  # hooks' references stay intact


def test_leaf_takes_over_a_fresh_gradient(device):
    """A gradient nothing else references becomes .grad without a copy (PyTorch steals it)."""
    x = ember.ones(2, 3, device=device).requires_grad_()
    w = ember.ones(3, 4, device=device)
    seen = []
    y = x.mm(w)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_inputs[0]))
    y.sum().backward()
    assert x.grad.tolist() == [[4.0] * 3] * 2
    assert x.grad is not seen[0]  # a hook saw it: copied
    x.grad = None
    x.mm(w).sum().backward()
    assert x.grad._base is None and x.grad.is_contiguous()


# ---- hooks and retain_grad, against PyTorch ------------------------------------------------------
def _hooks_and_retain(lib, device=None):
    """A graph with tensor hooks (leaf and non-leaf), node hooks and retain_grad; returns what
    every hook saw and every .grad."""
    kw = {"device": device} if lib is ember else {}
    log = []
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, **kw).requires_grad_()
    x.register_hook(lambda g: log.append(("x", g.tolist())))
    y = x * x
    y.retain_grad()
    y.register_hook(lambda g: g * 10)  # runs before retain_grad stores .grad: .grad is 10x
    handle = y.register_hook(lambda g: log.append(("never", g.tolist())))
    handle.remove()
    z = y.sin()
    z.retain_grad()
    z.grad_fn.register_hook(lambda gi, go: log.append(("node", [g.tolist() for g in gi])))
    z.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    w = z * 2
    w.retain_grad()
    w.mul_(3)  # retain_grad follows the new value: w.grad is the gradient after mul_
    w.sum().backward()
    (x * 2).sum().backward()
    grads = [t.grad.tolist() for t in (x, y, z, w)]
    return log, grads


def test_hooks_and_retain_grad_match_pytorch(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _hooks_and_retain(ember, device), _hooks_and_retain(torch)
    assert len(ours[0]) == len(theirs[0])
    for (name, got), (want_name, want) in zip(ours[0], theirs[0]):
        assert name == want_name
        np.testing.assert_allclose(got, want, err_msg=name)
    for got, want in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(got, want)


def test_leaf_hooks_apply_to_autograd_grad(device):
    x = _leaf([1.0, 2.0], device)
    x.register_hook(lambda g: g * 10)
    assert grad((x * x).sum(), x)[0].tolist() == [20.0, 40.0]
    assert x.grad is None


def test_retained_grad_is_a_copy(device):
    """retain_grad stores a copy: later backward calls accumulate into it without touching the
    caller's gradient."""
    x = _leaf([1.0, 2.0], device)
    y = x + 0
    y.retain_grad()
    given = ember.ones(2, dtype=ember.float64, device=device)
    y.backward(given, retain_graph=True)
    y.backward(given)
    assert given.tolist() == [1.0, 1.0]
    assert y.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [2.0, 2.0]
    assert y.retains_grad and not x.retains_grad
