"""Layers that draw random numbers (dropouts, RReLU in training, gumbel_softmax): ember's
generator is not PyTorch's, so these check the structure of the draws (what is zeroed together,
which values appear), their statistics, PyTorch's formula applied to ember's own draw, gradients,
evaluation mode, reprs and errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .oracle import to_numpy

torch = pytest.importorskip("torch")

ALPHA = 1.7580993408473766  # SELU's alpha * scale


@pytest.mark.parametrize(
    "name, shape",
    [("Dropout1d", (40, 30, 5)), ("Dropout2d", (40, 30, 2, 3)), ("Dropout3d", (40, 30, 2, 2, 2))],
)
def test_channel_dropout_zeroes_whole_channels(device, name, shape):
    layer = getattr(ember.nn, name)(0.3)
    x = ember.ones(shape, device=device, requires_grad=True)
    out = layer(x)
    values = to_numpy(out).reshape(shape[0], shape[1], -1)
    per_channel = values[:, :, :1]
    assert np.all(values == per_channel), "a channel is not dropped as a whole"
    assert np.all(np.isclose(per_channel, 0) | np.isclose(per_channel, 1 / 0.7))
    assert 0.2 < (per_channel == 0).mean() < 0.4
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), to_numpy(out), rtol=1e-6)
    layer.eval()
    assert bool((layer(x) == x).all())
    assert repr(layer) == repr(getattr(torch.nn, name)(0.3))


def test_channel_dropout_unbatched_and_errors(device):
    x = ember.ones(30, 6, device=device)
    out = to_numpy(F.dropout1d(x, 0.5))
    assert np.all(out == out[:, :1])  # (C, L): one draw per channel
    out = to_numpy(F.dropout3d(ember.ones(30, 2, 2, 2, device=device), 0.5))
    assert np.all(out.reshape(30, -1) == out.reshape(30, -1)[:, :1])
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(ember.ones(2, 3, 4, 5, device=device))
    with pytest.raises(ValueError, match="between 0 and 1"):
        ember.nn.Dropout2d(-0.1)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(ember.ones(2, 3, 4, device=device))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(ember.ones(2, 3, device=device), training=False)


def test_channel_dropout_inplace(device):
    x = ember.ones(8, 4, 3, device=device)
    out = F.dropout1d(x, 0.5, inplace=True)
    assert out.data_ptr() == x.data_ptr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x4 = x.unsqueeze(0)
        assert F.dropout2d(x4, 0.0) is x4


@pytest.mark.parametrize("feature", [False, True], ids=["alpha", "feature_alpha"])
def test_alpha_dropout_is_torchs_formula_on_our_mask(device, rng, feature, p=0.2):
    shape = (50, 20, 4)
    x = rng.standard_normal(shape).astype(np.float32)
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    ours_x = ember.tensor(x, device=device, requires_grad=True)
    out = fn(ours_x, p, training=True)
    a = 1 / math.sqrt((ALPHA**2 * p + 1) * (1 - p))
    dropped_value = ALPHA * a * (p - 1)
    kept = np.abs(to_numpy(out) - dropped_value) > 1e-6
    if feature:
        kept = kept.reshape(50, 20, -1).any(-1, keepdims=True) | np.zeros(shape, bool)
    expected = np.where(kept, x * a + ALPHA * a * p, dropped_value)
    np.testing.assert_allclose(to_numpy(out), expected, rtol=1e-5, atol=1e-6)
    assert 0.15 < 1 - kept.mean() < 0.25
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(ours_x.grad), kept * a, rtol=1e-6)


def test_alpha_dropout_keeps_selu_statistics(device):
    ember.manual_seed(0)
    x = ember.randn(200000, device=device)
    out = F.alpha_dropout(x, 0.3, training=True)
    assert abs(out.mean().item()) < 0.02 and abs(out.std().item() - 1) < 0.02
    layer = ember.nn.AlphaDropout(0.3)
    layer.eval()
    assert layer(x) is x
    assert bool((F.alpha_dropout(x, 1.0, training=True) == 0).all())
    assert repr(ember.nn.FeatureAlphaDropout(0.1, True)) == repr(
        torch.nn.FeatureAlphaDropout(0.1, True)
    )


def test_rrelu_training_slopes(device, rng):
    x = rng.standard_normal(4000).astype(np.float32)
    ours_x = ember.tensor(x, device=device, requires_grad=True)
    out = ember.nn.RReLU(0.1, 0.3)(ours_x)
    slopes = to_numpy(out) / x
    assert np.all(slopes[x > 0] == 1)
    negative = slopes[x < 0]
    assert negative.min() >= 0.1 and negative.max() <= 0.3
    assert abs(negative.mean() - 0.2) < 0.01 and negative.std() > 0.05
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(ours_x.grad), slopes, rtol=1e-5)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax(device, rng, hard):
    logits = ember.tensor(
        np.log([[0.7, 0.2, 0.1]] * 3000).astype(np.float32), device=device, requires_grad=True
    )
    out = F.gumbel_softmax(logits, tau=0.5, hard=hard)
    values = to_numpy(out)
    np.testing.assert_allclose(values.sum(-1), 1, rtol=1e-5)
    if hard:
        assert set(np.unique(values)) <= {0.0, 1.0}
    # A Gumbel-max sample picks each class with its probability.
    frequencies = np.bincount(values.argmax(-1), minlength=3) / 3000
    np.testing.assert_allclose(frequencies, [0.7, 0.2, 0.1], atol=0.04)
    (out * ember.arange(3.0, device=device)).sum().backward()
    assert np.abs(to_numpy(logits.grad)).sum() > 0  # straight-through: the soft gradient
