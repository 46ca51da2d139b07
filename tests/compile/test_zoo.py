"""Compiled == eager for the nn zoo (tests/jit/zoo.py) on every device, at the example size and
at other sizes (recompiles), and 50-step training loss curves."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.jit.zoo import CASES, _gpt_class


def _numpy(out):
    if isinstance(out, tuple):
        return [_numpy(o) for o in out]
    return out.detach().cpu().numpy()


def _on(args, device):
    if isinstance(args, (tuple, list)):
        return type(args)(_on(a, device) for a in args)
    return args.to(device) if isinstance(args, ember.Tensor) else args


@pytest.mark.parametrize("name", list(CASES))
def test_zoo_compiled_matches_eager(name, device):
    case = CASES[name]
    model = copy.deepcopy(case.model).to(device)
    compiled = ember.compile(model)
    for args in [case.example, case.example, *case.others]:
        args = _on(args, device)
        got, want = compiled(*args), model(*args)
        np.testing.assert_allclose(
            np.concatenate([np.ravel(a) for a in _flat(_numpy(got))]),
            np.concatenate([np.ravel(a) for a in _flat(_numpy(want))]),
            rtol=1e-5,
            atol=1e-5,
        )
    assert compiled._compiled._count == 1 + len(case.others)
    assert all(e.region is not None for es in compiled._compiled._cache.values() for e in es)


def _flat(items):
    if isinstance(items, list):
        return [leaf for item in items for leaf in _flat(item)]
    return [items]


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.drop(x.flatten(1)))


def _mlp_setup():
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, 3))
    return model, lambda g: (ember.randn(8, 6, generator=g), ember.randint(0, 3, (8,), generator=g))


def _cnn_setup():
    return _CNN(), lambda g: (
        ember.randn(4, 1, 8, 8, generator=g),
        ember.randint(0, 3, (4,), generator=g),
    )


def _gpt_setup():
    model = _gpt_class()(vocab=16, context=8, d_model=16, heads=2, layers=1, dropout=0.1)
    return model, lambda g: (
        ember.randint(0, 16, (2, 8), generator=g),
        ember.randint(0, 16, (2, 8), generator=g),
    )


def _losses(setup, device, compiled: bool, steps: int = 50) -> list[float]:
    ember.manual_seed(0)
    model, batch = setup()
    model.to(device).train()
    run = ember.compile(model) if compiled else model
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = (t.to(device) for t in batch(ember.Generator().manual_seed(1)))
    losses = []
    for _ in range(steps):
        logits = run(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("setup", [_mlp_setup, _cnn_setup, _gpt_setup], ids=["mlp", "cnn", "gpt"])
def test_training_loss_curves_match_eager(setup, device):
    eager = _losses(setup, device, compiled=False)
    compiled = _losses(setup, device, compiled=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)
    assert eager[-1] < eager[0]
