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
