"""Gradients of small models against PyTorch: an MLP, a conv net, LSTM steps and attention.

Each model is built from the same nn modules in both frameworks (ember.nn mirrors torch.nn),
ember gets torch's initial weights through numpy, both run the same input and loss in float64,
and every parameter's gradient and the input's gradient must agree."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import torch

RTOL, ATOL = 1e-9, 1e-11


def mlp(nn):
    return nn.Sequential(
        nn.Linear(10, 16),
        nn.ReLU(),
        nn.Linear(16, 16),
        nn.LayerNorm(16),
        nn.GELU(),
        nn.Linear(16, 16),
        nn.Tanh(),
        nn.Linear(16, 5),
    )


def convnet(nn):
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1),
        nn.BatchNorm2d(6),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3, stride=2, padding=1, bias=False),
        nn.SiLU(),
        nn.AdaptiveAvgPool2d((2, 2)),
        nn.Flatten(),
        nn.Linear(32, 5),
    )


class LSTMSteps:
    """An LSTMCell stepped by hand and a 2-layer LSTM over the sequence, then a linear head."""

    def __init__(self, nn):
        self.cell = nn.LSTMCell(6, 8)
        self.lstm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 5)
        self.modules = [self.cell, self.lstm, self.head]

    def __call__(self, lib, x):
        h = c = lib.zeros(x.shape[0], 8, dtype=x.dtype, device=x.device)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        out, _ = self.lstm(x)
        return self.head(lib.cat([h, out[:, -1]], 1))


class Attention:
    """Multi-head self-attention (key padding mask), then scaled_dot_product_attention with a
    causal mask over the result, pooled into a linear head."""

    def __init__(self, nn):
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 5)
        self.modules = [self.attn, self.norm, self.head]

    def __call__(self, lib, x):
        pad = lib.zeros(x.shape[0], x.shape[1], dtype=lib.bool, device=x.device)
        pad[:, -1] = True
        y, _ = self.attn(x, x, x, key_padding_mask=pad)
        y = self.norm(y + x)
        q = y.reshape(y.shape[0], y.shape[1], 2, 4).transpose(1, 2)
        z = lib.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        return self.head(z.transpose(1, 2).reshape(y.shape).mean(1))


class Wrapped:
    """A module (or tuple of modules) called as ``model(lib, x)``."""

    def __init__(self, module):
        self.module = module
        self.modules = [module]

    def __call__(self, lib, x):
        return self.module(x)


MODELS = {
    "mlp": (lambda nn: Wrapped(mlp(nn)), (7, 10)),
    "convnet": (lambda nn: Wrapped(convnet(nn)), (4, 3, 8, 8)),
    "lstm": (LSTMSteps, (3, 4, 6)),
    "attention": (Attention, (2, 5, 8)),
}


def _build(lib, name, torch_model=None, device="cpu"):
    make, _ = MODELS[name]
    if lib is torch:
        torch.manual_seed(0)
    model = make(lib.nn)
    for module in model.modules:
        module.double().to(device)
        module.train()
    if torch_model is not None:
        for ours, theirs in zip(model.modules, torch_model.modules):
            state = {
                k: ember.tensor(v.detach().numpy(), device=device)
                for k, v in theirs.state_dict().items()
            }
            ours.load_state_dict(state)
    return model


def _run(lib, model, x_values, target, device="cpu"):
    x = lib.tensor(x_values, device=device).requires_grad_()
    logits = model(lib, x)
    loss = lib.nn.functional.cross_entropy(logits, lib.tensor(target, device=device))
    loss.backward()
    grads = {}
    for i, module in enumerate(model.modules):
        for key, p in module.named_parameters():
            grads[f"{i}.{key}"] = p.grad.detach().cpu().numpy()
    return loss.item(), x.grad.cpu().numpy(), grads


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_gradients_match_pytorch(name, device):
    theirs_model = _build(torch, name)
    ours_model = _build(ember, name, theirs_model, device)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(MODELS[name][1])
    target = rng.integers(0, 5, x.shape[0])
    loss_t, xg_t, grads_t = _run(torch, theirs_model, x, target)
    loss_e, xg_e, grads_e = _run(ember, ours_model, x, target, device)
    assert loss_e == pytest.approx(loss_t, rel=RTOL)
    np.testing.assert_allclose(xg_e, xg_t, rtol=RTOL, atol=ATOL, err_msg="input gradient")
    assert grads_e.keys() == grads_t.keys()
    for key in grads_t:
        np.testing.assert_allclose(grads_e[key], grads_t[key], rtol=RTOL, atol=ATOL, err_msg=key)
