"""Losses against PyTorch: module and functional forms, every reduction, values and gradients
with respect to the input (and to float targets, which PyTorch also differentiates)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import check_module, to_ember, to_torch

torch = pytest.importorskip("torch")

REDUCTIONS = ["mean", "sum", "none"]
F32 = np.float32


def _normal(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(F32)


def _prob(rng, *shape):
    return (1 / (1 + np.exp(-rng.standard_normal(shape) * 2))).astype(F32)


def _classes(rng, shape, n, ignore=None):
    target = rng.integers(0, n, size=shape).astype(np.int64)
    if ignore is not None:
        target.flat[::3] = ignore
    return target


def _softmax_rows(rng, shape, axis=1):
    x = rng.standard_normal(shape)
    e = np.exp(x - x.max(axis, keepdims=True))
    return (e / e.sum(axis, keepdims=True)).astype(F32)


def regression(rng):
    return [_normal(rng, 4, 3, scale=2), _normal(rng, 4, 3, scale=2)]


# name -> list of (constructor kwargs, inputs(rng)); tensors in kwargs are numpy arrays.
CASES = {
    "MSELoss": [({}, regression)],
    "L1Loss": [({}, regression)],
    "SmoothL1Loss": [({}, regression), ({"beta": 0.5}, regression), ({"beta": 0.0}, regression)],
    "HuberLoss": [({}, regression), ({"delta": 0.3}, regression), ({"delta": 2.5}, regression)],
    "CrossEntropyLoss": [
        ({}, lambda r: [_normal(r, 5, 4), _classes(r, (5,), 4)]),
        ({}, lambda r: [_normal(r, 4), _classes(r, (), 4)]),
        ({}, lambda r: [_normal(r, 2, 4, 3, 2), _classes(r, (2, 3, 2), 4)]),
        (
            {"weight": np.array([0.5, 2.0, 1.0, 0.1], F32)},
            lambda r: [_normal(r, 6, 4), _classes(r, (6,), 4)],
        ),
        ({"ignore_index": 2}, lambda r: [_normal(r, 6, 4), _classes(r, (6,), 4, ignore=2)]),
        (
            {"ignore_index": -1, "weight": np.array([0.5, 2.0, 1.0], F32)},
            lambda r: [_normal(r, 2, 3, 4), _classes(r, (2, 4), 3, ignore=-1)],
        ),
        ({"label_smoothing": 0.2}, lambda r: [_normal(r, 5, 4), _classes(r, (5,), 4)]),
        (
            {"label_smoothing": 0.1, "weight": np.array([0.5, 2.0, 1.0, 0.3], F32)},
            lambda r: [_normal(r, 5, 4), _classes(r, (5,), 4)],
        ),
        (
            {"label_smoothing": 0.3, "ignore_index": 1, "weight": np.array([0.5, 2.0, 1.0], F32)},
            lambda r: [_normal(r, 2, 3, 5), _classes(r, (2, 5), 3, ignore=1)],
        ),
        ({}, lambda r: [_normal(r, 5, 4), _softmax_rows(r, (5, 4))]),
        ({"label_smoothing": 0.25}, lambda r: [_normal(r, 2, 3, 4), _softmax_rows(r, (2, 3, 4))]),
        (
            {"weight": np.array([0.5, 2.0, 1.0], F32), "label_smoothing": 0.1},
            lambda r: [_normal(r, 4, 3), _softmax_rows(r, (4, 3))],
        ),
        ({}, lambda r: [_normal(r, 3), _softmax_rows(r, (3,), 0)]),
    ],
    "NLLLoss": [
        ({}, lambda r: [_normal(r, 5, 4), _classes(r, (5,), 4)]),
        (
            {"weight": np.array([0.5, 2.0, 1.0], F32)},
            lambda r: [_normal(r, 2, 3, 4), _classes(r, (2, 4), 3)],
        ),
        ({"ignore_index": 0}, lambda r: [_normal(r, 6, 3), _classes(r, (6,), 3, ignore=0)]),
        ({}, lambda r: [_normal(r, 3), _classes(r, (), 3)]),
    ],
    "BCELoss": [
        ({}, lambda r: [_prob(r, 4, 3), _prob(r, 4, 3)]),
        ({"weight": np.array([0.5, 2.0, 1.0], F32)}, lambda r: [_prob(r, 4, 3), _prob(r, 4, 3)]),
    ],
    "BCEWithLogitsLoss": [
        ({}, lambda r: [_normal(r, 4, 3, scale=3), _prob(r, 4, 3)]),
        ({"weight": np.array([0.5, 2.0, 1.0], F32)}, lambda r: [_normal(r, 4, 3), _prob(r, 4, 3)]),
        (
            {"pos_weight": np.array([3.0, 0.5, 1.0], F32)},
            lambda r: [_normal(r, 2, 4, 3, scale=3), _prob(r, 2, 4, 3)],
        ),
        (
            {
                "weight": np.array([[2.0], [1.0], [0.5], [1.0]], F32),
                "pos_weight": np.array([3.0, 0.5, 1.0], F32),
            },
            lambda r: [_normal(r, 4, 3), _prob(r, 4, 3)],
        ),
    ],
    "KLDivLoss": [
        ({}, lambda r: [np.log(_softmax_rows(r, (4, 5))), _softmax_rows(r, (4, 5))]),
        (
            {"log_target": True},
            lambda r: [np.log(_softmax_rows(r, (4, 5))), np.log(_softmax_rows(r, (4, 5)))],
        ),
    ],
    "CosineEmbeddingLoss": [
        ({}, lambda r: [_normal(r, 5, 3), _normal(r, 5, 3), np.array([1, -1, 1, -1, -1])]),
        (
            {"margin": 0.3},
            lambda r: [_normal(r, 5, 3), _normal(r, 5, 3), np.array([1, -1, 1, -1, -1])],
        ),
        ({"margin": -0.2}, lambda r: [_normal(r, 3), _normal(r, 3), np.array(-1)]),
        ({"margin": 0.1}, lambda r: [np.zeros((2, 3), F32), _normal(r, 2, 3), np.array([1, -1])]),
    ],
}

FUNCTIONAL = {
    "MSELoss": "mse_loss",
    "L1Loss": "l1_loss",
    "SmoothL1Loss": "smooth_l1_loss",
    "HuberLoss": "huber_loss",
    "CrossEntropyLoss": "cross_entropy",
    "NLLLoss": "nll_loss",
    "BCELoss": "binary_cross_entropy",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits",
    "KLDivLoss": "kl_div",
    "CosineEmbeddingLoss": "cosine_embedding_loss",
}

PARAMS = [
    pytest.param(name, kwargs, inputs, id=f"{name}-{i}")
    for name, cases in CASES.items()
    for i, (kwargs, inputs) in enumerate(cases)
]


def _build(name, kwargs, reduction, device):
    ours_kw = {
        k: to_ember(v, device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    theirs_kw = {k: to_torch(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    ours = getattr(ember.nn, name)(reduction=reduction, **ours_kw)
    theirs = getattr(torch.nn, name)(reduction=reduction, **theirs_kw)
    return ours, theirs


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name, kwargs, inputs", PARAMS)
def test_loss_module(device, rng, name, kwargs, inputs, reduction):
    ours, theirs = _build(name, kwargs, reduction, device)
    check_module(ours, theirs, inputs(rng), device)


def test_kl_div_batchmean(device, rng):
    ours, theirs = _build("KLDivLoss", {}, "batchmean", device)
    inputs = [np.log(_softmax_rows(rng, (4, 5))), _softmax_rows(rng, (4, 5))]
    check_module(ours, theirs, inputs, device)


@pytest.mark.parametrize("name, kwargs, inputs", PARAMS)
def test_loss_functional(device, rng, name, kwargs, inputs):
    """The functional forms take the same options, by keyword, as the modules."""
    fn_name = FUNCTIONAL[name]
    ours_kw = {
        k: to_ember(v, device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    theirs_kw = {k: to_torch(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}

    def ours(*args):
        return getattr(ember.nn.functional, fn_name)(*args, **ours_kw)

    def theirs(*args):
        return getattr(torch.nn.functional, fn_name)(*args, **theirs_kw)

    check_module(ours, theirs, inputs(rng), device)


@pytest.mark.parametrize("name", ["binary_cross_entropy", "binary_cross_entropy_with_logits"])
def test_binary_cross_entropy_saturated(device, name):
    """Probabilities of exactly 0 and 1 (and logits far out) give torch's finite values and
    gradients, not NaN."""
    x = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 0.5], np.float32)
    if name.endswith("logits"):
        x = (x - 0.5) * 400
    t = np.array([0.0, 1.0, 0.0, 1.0, 0.3, 0.5], np.float32)
    ours, theirs = getattr(ember.nn.functional, name), getattr(torch.nn.functional, name)
    for reduction in ("none", "sum"):

        def bind(fn, reduction=reduction):
            return lambda a, b: fn(a, b, reduction=reduction)

        check_module(bind(ours), bind(theirs), [x, t], device, rtol=1e-5)


def test_loss_repr_and_buffers(device):
    weight = ember.tensor([1.0, 2.0], device=device)
    loss = ember.nn.CrossEntropyLoss(weight, label_smoothing=0.1)
    assert repr(loss) == "CrossEntropyLoss()"
    assert [k for k, _ in loss.named_buffers()] == ["weight"]
    assert list(loss.state_dict()) == list(torch.nn.CrossEntropyLoss(torch.ones(2)).state_dict())
    assert ember.nn.BCEWithLogitsLoss().pos_weight is None
    assert ember.nn.MSELoss().reduction == "mean"


def test_loss_legacy_size_average_and_reduce(device, rng):
    """size_average / reduce (deprecated) still map to a reduction, as in PyTorch."""
    x, y = _normal(rng, 4, 3), _normal(rng, 4, 3)
    for options in ({"size_average": False}, {"reduce": False}, {"size_average": True}):
        ours = ember.nn.MSELoss(**options)(to_ember(x, device), to_ember(y, device))
        theirs = torch.nn.MSELoss(**options)(to_torch(x), to_torch(y))
        np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-5)
