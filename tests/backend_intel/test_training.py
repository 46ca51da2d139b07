"""Models train on xpu as on the CPU: the same initial weights and batches give the same losses
and weights within float32 tolerance, with no op falling back to the CPU."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatcher.registry import PerformanceWarning


def _cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.GELU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 2 * 2, 10),
    )


def _mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(12, 32), nn.LayerNorm(32), nn.Tanh(), nn.Dropout(0.0), nn.Linear(32, 10)
    )


def _embedding_model() -> nn.Module:
    class Bag(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(50, 16)
            self.head = nn.Linear(16, 10)

        def forward(self, tokens):
            return self.head(self.embed(tokens).mean(1))

    return Bag()


def _batches(kind: str, rng, steps: int = 4):
    """One batch, ``steps`` times: the loss must fall as the model fits it."""
    target = ember.from_numpy(rng.integers(0, 10, 16))
    if kind == "cnn":
        x = ember.from_numpy(rng.standard_normal((16, 1, 8, 8)).astype(np.float32))
    elif kind == "mlp":
        x = ember.from_numpy(rng.standard_normal((16, 12)).astype(np.float32))
    else:
        x = ember.from_numpy(rng.integers(0, 50, (16, 5)))
    return [(x, target)] * steps


def _train(model, kind: str, device: str, optimizer_cls):
    model = copy.deepcopy(model).to(device)
    optimizer = optimizer_cls(model.parameters(), lr=0.05)
    losses = []
    for x, target in _batches(kind, np.random.default_rng(0)):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x.to(device)), target.to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, {k: v.cpu().numpy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize(
    "kind, make, optimizer",
    [
        ("cnn", _cnn, ember.optim.SGD),
        ("mlp", _mlp, ember.optim.Adam),
        ("embedding", _embedding_model, ember.optim.SGD),
    ],
)
def test_training_matches_the_cpu(kind, make, optimizer):
    ember.manual_seed(0)
    model = make()
    cpu_losses, cpu_state = _train(model, kind, "cpu", optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)  # no op may fall back to the CPU
        xpu_losses, xpu_state = _train(model, kind, "xpu", optimizer)
    np.testing.assert_allclose(xpu_losses, cpu_losses, rtol=1e-4, atol=1e-5)
    assert cpu_losses[-1] < cpu_losses[0]
    for name, value in cpu_state.items():
        np.testing.assert_allclose(xpu_state[name], value, rtol=1e-3, atol=1e-5, err_msg=name)
