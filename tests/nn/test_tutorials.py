"""Tutorial-style programs written once against the shared API and run with ``lib`` = ember and
lib = torch from the same initial weights and data: the training losses and the final
predictions must agree step by step (float64, so the comparison is tight). Each exercises a
family of the nn breadth work end to end: packed sequences through an LSTM, a spatial
transformer (affine_grid + grid_sample), a spectrally normalised GAN step with pruning, and a
CTC speech-style model."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import copy_state

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.utils.prune")  # a submodule torch.nn.utils does not import


def _tensor(lib, array):
    return lib.tensor(array) if lib is ember else torch.from_numpy(np.array(array))


def _twins(build):
    """The model built by ``build(lib)`` in both frameworks, ember's holding torch's weights."""
    torch.manual_seed(0)
    theirs = build(torch).double()
    ours = build(ember).double()
    copy_state(theirs, ours)
    return ours, theirs


def _run_both(build, train, data):
    ours, theirs = _twins(build)
    ours_losses = train(ember, ours, data)
    theirs_losses = train(torch, theirs, data)
    np.testing.assert_allclose(ours_losses, theirs_losses, rtol=1e-7, atol=1e-9)
    assert ours_losses[-1] < ours_losses[0], "the loss did not go down"
    return ours, theirs


# ---- 1. sequence classification over padded batches ---------------------------------------
def _classifier(lib):
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(12, 6, padding_idx=0)
            self.rnn = nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True)
            self.head = nn.Sequential(nn.Linear(16, 8), nn.Hardswish(), nn.Linear(8, 3))

        def forward(self, tokens, lengths):
            rnn_utils = lib.nn.utils.rnn
            packed = rnn_utils.pack_padded_sequence(
                self.embed(tokens), lengths, batch_first=True, enforce_sorted=False
            )
            _, (h, _) = self.rnn(packed)
            return self.head(lib.cat([h[-2], h[-1]], -1))

    return Classifier()


def _train_classifier(lib, model, data):
    tokens, lengths, labels = data
    optimizer = lib.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = lib.nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    for _ in range(6):
        optimizer.zero_grad()
        loss = loss_fn(model(_tensor(lib, tokens), lengths), _tensor(lib, labels))
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss))
    return losses


def test_packed_lstm_classifier():
    rng = np.random.default_rng(0)
    lengths = [5, 2, 7, 3, 6, 1]
    tokens = np.zeros((6, 7), dtype=np.int64)
    for i, n in enumerate(lengths):
        tokens[i, :n] = rng.integers(1, 12, n)
    labels = (tokens.sum(1) % 3).astype(np.int64)
    _run_both(_classifier, _train_classifier, (tokens, lengths, labels))


# ---- 2. spatial transformer network ---------------------------------------------------------
def _stn(lib):
    nn = lib.nn

    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.localization = nn.Sequential(
                nn.Conv2d(1, 4, 3), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(), nn.LazyLinear(6)
            )
            self.features = nn.Sequential(
                nn.Conv2d(1, 6, 3, padding=1, padding_mode="reflect"),
                nn.InstanceNorm2d(6, affine=True),
                nn.PReLU(6),
                nn.AdaptiveMaxPool2d(3),
                nn.Flatten(),
                nn.Linear(54, 4),
            )

        def forward(self, x):
            theta = self.localization(x).view(-1, 2, 3) * 0.1
            theta = theta + lib.tensor([[1.0, 0, 0], [0, 1.0, 0]], dtype=x.dtype)
            grid = lib.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
            warped = lib.nn.functional.grid_sample(x, grid, align_corners=False)
            return lib.nn.functional.log_softmax(self.features(warped), 1)

    model = STN()
    model(lib.zeros(1, 1, 10, 10))  # materialise the lazy layer
    return model


def _train_stn(lib, model, data):
    images, labels = data
    optimizer = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = lib.nn.functional.nll_loss(model(_tensor(lib, images)), _tensor(lib, labels))
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def test_spatial_transformer():
    rng = np.random.default_rng(1)
    images = rng.standard_normal((8, 1, 10, 10))
    labels = rng.integers(0, 4, 8).astype(np.int64)
    _run_both(_stn, _train_stn, (images, labels))


# ---- 3. a spectrally normalised GAN step, then pruning --------------------------------------
def _gan(lib):
    nn = lib.nn
    spectral_norm = lib.nn.utils.parametrizations.spectral_norm

    class GAN(nn.Module):
        def __init__(self):
            super().__init__()
            self.generator = nn.Sequential(
                nn.ConvTranspose2d(4, 6, 4, 1, 0, bias=False),
                nn.BatchNorm2d(6),
                nn.ReLU(),
                nn.ConvTranspose2d(6, 1, 4, 2, 1),
                nn.Tanh(),
            )
            self.critic = nn.Sequential(
                spectral_norm(nn.Conv2d(1, 6, 4, 2, 1)),
                nn.LeakyReLU(0.2),
                nn.Dropout2d(0.0),
                spectral_norm(nn.Conv2d(6, 1, 4, 1, 0)),
                nn.Flatten(),
            )

    return GAN()


def _train_gan(lib, model, data):
    noise, real = data
    loss_fn = lib.nn.BCEWithLogitsLoss()
    g_opt = lib.optim.Adam(model.generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    d_opt = lib.optim.Adam(model.critic.parameters(), lr=2e-3, betas=(0.5, 0.999))
    losses = []
    for _ in range(4):
        fake = model.generator(_tensor(lib, noise))
        d_opt.zero_grad()
        ones, zeros = lib.ones(4, 1, dtype=fake.dtype), lib.zeros(4, 1, dtype=fake.dtype)
        d_loss = loss_fn(model.critic(_tensor(lib, real)), ones)
        d_loss = d_loss + loss_fn(model.critic(fake.detach()), zeros)
        d_loss.backward()
        d_opt.step()
        g_opt.zero_grad()
        g_loss = loss_fn(model.critic(fake), ones)
        g_loss.backward()
        g_opt.step()
        losses.append(float(d_loss))
    prune = lib.nn.utils.prune
    layers = [(model.generator[0], "weight"), (model.generator[3], "weight")]
    prune.global_unstructured(layers, pruning_method=prune.L1Unstructured, amount=0.5)
    with lib.no_grad():
        losses.append(float(model.generator(_tensor(lib, noise)).abs().mean()))
    return losses


def test_gan_with_spectral_norm_and_pruning():
    rng = np.random.default_rng(2)
    data = (rng.standard_normal((4, 4, 1, 1)), np.tanh(rng.standard_normal((4, 1, 8, 8))))
    ours, theirs = _twins(_gan)
    copy_state(theirs, ours)  # spectral_norm's power iteration starts from random vectors
    np.testing.assert_allclose(
        _train_gan(ember, ours, data), _train_gan(torch, theirs, data), rtol=1e-7, atol=1e-9
    )
    sparsity = float((ours.generator[0].weight == 0).double().mean())
    assert sparsity > 0.2


# ---- 4. CTC ----------------------------------------------------------------------------------
def _speech(lib):
    nn = lib.nn

    class Speech(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(5, 8, 3, padding=1)
            self.norm = nn.LayerNorm(8)
            self.rnn = nn.GRU(8, 6, bidirectional=True)
            self.out = nn.Linear(12, 5)

        def forward(self, features):  # (N, C, T)
            x = nn.functional.gelu(self.conv(features)).permute(2, 0, 1)  # (T, N, C)
            x, _ = self.rnn(self.norm(x))
            return nn.functional.log_softmax(self.out(x), -1)

    return Speech()


def _train_speech(lib, model, data):
    features, targets, input_lengths, target_lengths = data
    loss_fn = lib.nn.CTCLoss(blank=0, zero_infinity=True)
    optimizer = lib.optim.AdamW(model.parameters(), lr=0.02)
    losses = []
    for _ in range(6):
        optimizer.zero_grad()
        log_probs = model(_tensor(lib, features))
        loss = loss_fn(log_probs, _tensor(lib, targets), input_lengths, target_lengths)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def test_ctc_speech_model():
    rng = np.random.default_rng(3)
    features = rng.standard_normal((3, 5, 12))
    targets = rng.integers(1, 5, (3, 4)).astype(np.int64)
    _run_both(_speech, _train_speech, (features, targets, [12, 10, 12], [4, 3, 2]))
