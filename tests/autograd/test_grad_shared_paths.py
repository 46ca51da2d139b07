"""autograd.grad where an input reaches the output along several paths: every path's gradient
counts (the engine once skipped nodes whose only route to the input went through a shared node,
so grad(x * x * x, x) gave x**2)."""

from __future__ import annotations

import numpy as np
import pytest

import ember


@pytest.mark.parametrize(
    "fn, derivative",
    [
        (lambda x: x * x * x, lambda x: 3 * x**2),
        (lambda x: x.exp() * x, lambda x: np.exp(x) * (1 + x)),
        (lambda x: (x * x).sum() * x, lambda x: 2 * x * x.sum() + (x * x).sum()),
    ],
)
@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_sums_every_path(fn, derivative, create_graph):
    values = np.array([0.5, -1.0, 2.0])
    x = ember.tensor(values, requires_grad=True)
    (g,) = ember.autograd.grad(fn(x).sum(), [x], create_graph=create_graph)
    np.testing.assert_allclose(g.detach().numpy(), derivative(values), rtol=1e-12)


def test_second_order_through_shared_paths():
    x = ember.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad((x * x * x).sum(), [x], create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy(), rtol=1e-12)
