"""The backward engine: order, accumulation, graph release, errors, hooks, inputs= and
higher-order gradients, checked against PyTorch where it has the same API."""

from __future__ import annotations

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
