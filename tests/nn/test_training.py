"""Short training runs, ember next to PyTorch from identical weights and data: the loss curves
and the final weights must agree. Each model is written once, against a framework namespace,
the way a user's script runs after ``import ember as torch``."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import copy_state, to_ember, to_numpy, to_torch

torch = pytest.importorskip("torch")
STEPS = 20
BATCHES = 4  # the runs cycle over a few fixed batches, so the loss must go down


def mlp(lib):
    nn = lib.nn
    model = nn.Sequential(
        nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4)
    )
    return model, lambda params: lib.optim.SGD(params, lr=0.1)


def cnn(lib):
    nn = lib.nn
    model = nn.Sequential(
        nn.Conv2d(1, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.GELU(), nn.AdaptiveAvgPool2d(2),
        nn.Flatten(), nn.Dropout(0.0), nn.Linear(32, 4),
    )  # fmt: skip
    return model, lambda params: lib.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)


def gru(lib):
    nn = lib.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, 8, padding_idx=0)
            self.rnn = nn.GRU(8, 16, batch_first=True, bidirectional=True)
            self.norm = nn.LayerNorm(32)
            self.head = nn.Linear(32, 4)

        def forward(self, tokens):
            out, _ = self.rnn(self.embed(tokens))
            return self.head(self.norm(out[:, -1]))

    return Tagger(), lambda params: lib.optim.Adam(params, lr=1e-2)


def transformer(lib):
    nn = lib.nn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, 16)
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(16, 4)

        def forward(self, tokens):
            length = tokens.shape[1]
            mask = nn.Transformer.generate_square_subsequent_mask(length, device=tokens.device)
            return self.head(self.encoder(self.embed(tokens), mask=mask).mean(1))

    return Encoder(), lambda params: lib.optim.AdamW(params, lr=3e-3)


def _data(name, rng):
    if name == "mlp":
        x = rng.standard_normal((BATCHES, 16, 10)).astype(np.float32)
    elif name == "cnn":
        x = rng.standard_normal((BATCHES, 8, 1, 8, 8)).astype(np.float32)
    else:
        x = rng.integers(0, 12, size=(BATCHES, 8, 6)).astype(np.int64)
    y = rng.integers(0, 4, size=(BATCHES, x.shape[1])).astype(np.int64)
    return x, y


def _comparable(key, value):
    """The part of a parameter whose trajectory is determined. The key projection's bias gets an
    exactly-zero gradient in exact arithmetic (softmax ignores a per-row constant), so Adam
    turns each framework's rounding noise into lr-sized steps of its own: leave that slice out."""
    if key.endswith("in_proj_bias"):
        third = value.shape[0] // 3
        return np.concatenate([value[:third], value[2 * third :]])
    return value


@pytest.mark.parametrize(
    "name, build", [("mlp", mlp), ("cnn", cnn), ("gru", gru), ("transformer", transformer)]
)
def test_training_tracks_torch(device, rng, name, build):
    torch.manual_seed(0)
    theirs, theirs_opt = build(torch)
    ours, ours_opt = build(ember)
    copy_state(theirs, ours, device)
    ours.to(device)
    theirs_opt, ours_opt = theirs_opt(theirs.parameters()), ours_opt(ours.parameters())
    xs, ys = _data(name, rng)
    ours_losses, theirs_losses = [], []
    for step in range(STEPS):
        x, y = xs[step % BATCHES], ys[step % BATCHES]
        for model, opt, lib, convert, losses in (
            (ours, ours_opt, ember, lambda a: to_ember(a, device), ours_losses),
            (theirs, theirs_opt, torch, to_torch, theirs_losses),
        ):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(
                model(convert(x)), convert(y), label_smoothing=0.05
            )
            loss.backward()
            lib.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()
            losses.append(loss.item())
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=2e-4, atol=1e-5)
    assert sum(theirs_losses[-BATCHES:]) < sum(theirs_losses[:BATCHES])  # it learned
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            _comparable(key, to_numpy(ours.state_dict()[key])),
            _comparable(key, to_numpy(value)),
            rtol=1e-3,
            atol=1e-4,
            err_msg=key,
        )
    ours.eval()
    theirs.eval()
    with ember.no_grad(), torch.no_grad():
        np.testing.assert_allclose(
            to_numpy(ours(to_ember(xs[0], device))), to_numpy(theirs(to_torch(xs[0]))),
            rtol=1e-3, atol=1e-4,
        )  # fmt: skip
