"""Hogwild training (PyTorch's mnist_hogwild pattern): several processes update one shared model
with their own optimizers; the parent's model sees every update and ends up fitted, as the
same program does with PyTorch."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
import torch.multiprocessing as torch_mp

import ember
import ember.multiprocessing as mp

from . import children

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="tested on Linux")

LIBS = {"ember": (ember, mp), "torch": (torch, torch_mp)}
STEPS = 150


def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    w = np.array([[1.5], [-2.0], [0.5], [3.0]], np.float32)
    return x, x @ w + 0.25


@pytest.mark.parametrize("name, method", [("ember", "fork"), ("torch", "fork"), ("ember", "spawn")])
def test_hogwild_trains_one_shared_model(name, method):
    m, lib_mp = LIBS[name]
    x, y = (m.from_numpy(a) for a in data())
    m.manual_seed(0)
    model = m.nn.Linear(4, 1)
    model.share_memory()
    counter = m.zeros(2, dtype=m.int64).share_memory_()
    before = ((model(x) - y) ** 2).mean().item()
    # PyTorch's first optimizer step imports seconds of modules: once here, not per child.
    m.optim.SGD([m.zeros(1, requires_grad=True)], lr=0.1).step()
    ctx = lib_mp.get_context(method)
    procs = [
        ctx.Process(target=children.hogwild, args=(rank, name, model, x, y, STEPS, counter))
        for rank in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    assert [p.exitcode for p in procs] == [0, 0]
    assert counter.tolist() == [STEPS, STEPS]  # each process's writes reached the parent
    with m.no_grad():
        after = ((model(x) - y) ** 2).mean().item()
    assert after < 1e-3 < before
    np.testing.assert_allclose(
        model.weight.detach().numpy().ravel(), [1.5, -2.0, 0.5, 3.0], atol=0.05
    )
