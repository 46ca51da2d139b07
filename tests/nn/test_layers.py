"""Every deterministic layer against PyTorch's: same weights, same input, same upstream gradient;
outputs, input gradients and parameter gradients must agree, over several configurations each.

A configuration is one row of ``LAYERS``: the layer's name in ``nn``, its constructor arguments, the
shapes of its (random float) inputs, and optionally forward keyword arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import assert_close, check_module, pair, to_ember, to_torch

torch = pytest.importorskip("torch")


def case(name, args=(), kwargs=None, shapes=((2, 3),), forward=None, dtype="float32", id=None):
    label = id or f"{name}-{args}-{kwargs or ''}-{list(shapes)}"
    return pytest.param(name, args, kwargs or {}, shapes, forward or {}, dtype, id=label)


LAYERS = [
    case("Identity", (3, "ignored"), {"also": 1}, [(2, 3)]),
    case("Linear", (5, 3), None, [(4, 5)]),
    case("Linear", (5, 3), {"bias": False}, [(2, 3, 5)]),
    case("Linear", (5, 3), None, [(5,)]),
    case("Bilinear", (3, 4, 2), None, [(5, 3), (5, 4)]),
    case("Bilinear", (3, 4, 2), {"bias": False}, [(2, 5, 3), (2, 5, 4)]),
    case("Flatten", (), None, [(2, 3, 4, 5)]),
    case("Flatten", (0, 2), None, [(2, 3, 4, 5)]),
    case("Unflatten", (1, (2, 3)), None, [(4, 6, 5)]),
    case("Unflatten", (-1, (2, -1)), None, [(4, 6)]),
    case("Conv1d", (4, 6, 3), None, [(2, 4, 10)]),
    case(
        "Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}, [(2, 4, 11)]
    ),
    case("Conv1d", (3, 2, 4), {"padding": "same", "bias": False}, [(3, 9)]),
    case("Conv1d", (3, 2, 5), {"padding": "same", "dilation": 2}, [(2, 3, 9)]),
    case("Conv1d", (4, 4, 3), {"groups": 4, "padding": "valid"}, [(1, 4, 7)]),
    case("Conv2d", (3, 4, 3), None, [(2, 3, 7, 6)]),
    case("Conv2d", (3, 4, (3, 2)), {"stride": (2, 1), "padding": (1, 2)}, [(2, 3, 8, 7)]),
    case("Conv2d", (4, 6, 3), {"dilation": (2, 1), "groups": 2, "bias": False}, [(2, 4, 9, 8)]),
    case("Conv2d", (2, 4, 3), {"padding": "same"}, [(2, 7, 5)]),
    case("Conv2d", (2, 4, 4), {"padding": "same", "stride": 1}, [(1, 2, 6, 6)]),
    case("Conv2d", (6, 6, 3), {"groups": 6, "stride": 2, "padding": 1}, [(2, 6, 9, 9)]),
    case("Conv2d", (2, 3, 1), None, [(2, 2, 4, 4)]),
    case("Conv2d", (2, 3, 3), {"padding": 1, "padding_mode": "reflect"}, [(2, 2, 5, 6)]),
    case(
        "Conv2d", (2, 3, (3, 2)), {"padding": (2, 1), "padding_mode": "replicate"}, [(1, 2, 5, 4)]
    ),
    case("Conv2d", (2, 4, 4), {"padding": "same", "padding_mode": "circular"}, [(1, 2, 6, 5)]),
    case(
        "Conv1d", (2, 3, 3), {"padding": 2, "padding_mode": "circular", "dilation": 2}, [(2, 2, 7)]
    ),
    case("ConvTranspose2d", (3, 2, 3), None, [(2, 3, 4, 5)]),
    case(
        "ConvTranspose2d",
        (4, 6, 3),
        {"stride": 2, "padding": 1, "output_padding": 1},
        [(2, 4, 4, 4)],
    ),
    case(
        "ConvTranspose2d",
        (4, 6, (2, 3)),
        {"groups": 2, "dilation": 2, "bias": False},
        [(1, 4, 3, 5)],
    ),
    case("ConvTranspose2d", (2, 3, 3), {"stride": (2, 3), "padding": (0, 1)}, [(2, 4, 3)]),
    case(
        "ConvTranspose2d",
        (2, 3, 3),
        {"stride": 2},
        [(1, 2, 4, 4)],
        forward={"output_size": [10, 10]},
    ),
    case("MaxPool1d", (3,), None, [(2, 3, 10)]),
    case("MaxPool1d", (3, 2, 1), {"dilation": 2, "ceil_mode": True}, [(2, 3, 11)]),
    case("MaxPool1d", (2,), {"ceil_mode": True}, [(3, 7)]),
    case("MaxPool2d", (2,), None, [(2, 3, 8, 8)]),
    case("MaxPool2d", (3, 2, 1), None, [(2, 3, 7, 9)]),
    case("MaxPool2d", ((3, 2), (2, 1)), {"padding": (1, 0), "dilation": (1, 2)}, [(1, 2, 8, 9)]),
    case("MaxPool2d", (3, 2), {"ceil_mode": True}, [(2, 2, 8, 8)]),
    case("MaxPool2d", (2,), {"ceil_mode": True, "padding": 1}, [(3, 5, 6)]),
    case("AvgPool1d", (3,), None, [(2, 3, 10)]),
    case("AvgPool1d", (3, 2, 1), {"count_include_pad": False}, [(2, 3, 10)]),
    case("AvgPool1d", (4, 3, 2), {"ceil_mode": True}, [(2, 3, 10)]),
    case("AvgPool2d", (2,), None, [(2, 3, 8, 8)]),
    case("AvgPool2d", (3, 2, 1), None, [(2, 3, 7, 9)]),
    case("AvgPool2d", (3, 2, 1), {"count_include_pad": False}, [(2, 3, 7, 9)]),
    case("AvgPool2d", (3, 2, 1), {"ceil_mode": True}, [(2, 3, 8, 8)]),
    case("AvgPool2d", (3, 2, 1), {"ceil_mode": True, "count_include_pad": False}, [(2, 2, 8, 8)]),
    case("AvgPool2d", ((3, 2), (1, 2)), {"padding": (1, 0), "divisor_override": 5}, [(3, 6, 6)]),
    case("AdaptiveAvgPool1d", (4,), None, [(2, 3, 8)]),
    case("AdaptiveAvgPool1d", (3,), None, [(2, 3, 7)]),
    case("AdaptiveAvgPool2d", (1,), None, [(2, 3, 5, 4)]),
    case("AdaptiveAvgPool2d", ((3, 2),), None, [(2, 3, 7, 5)]),
    case("AdaptiveAvgPool2d", ((None, 3),), None, [(3, 4, 7)]),
    case("AdaptiveAvgPool2d", (5,), None, [(1, 2, 3, 4)]),
    case("LayerNorm", (5,), None, [(3, 4, 5)]),
    case("LayerNorm", ((4, 5),), {"eps": 1e-3}, [(3, 4, 5)]),
    case("LayerNorm", (5,), {"elementwise_affine": False}, [(2, 5)]),
    case("LayerNorm", (5,), {"bias": False}, [(2, 5)]),
    case("GroupNorm", (2, 4), None, [(3, 4, 5)]),
    case("GroupNorm", (3, 6), {"eps": 1e-3}, [(2, 6, 3, 4)]),
    case("GroupNorm", (1, 4), {"affine": False}, [(2, 4, 3)]),
    case("RMSNorm", (5,), None, [(3, 4, 5)]),
    case("RMSNorm", ((4, 5),), {"eps": 1e-4}, [(3, 4, 5)]),
    case("RMSNorm", (5,), {"elementwise_affine": False}, [(2, 5)]),
    case("Embedding", (10, 4), None, [(2, 5)]),
    case("Embedding", (10, 4), {"padding_idx": 0}, [(3, 5)]),
    case("Embedding", (10, 4), {"padding_idx": -2}, [(7,)]),
    case("Embedding", (10, 4), {"scale_grad_by_freq": True}, [(3, 5)]),
    case("Embedding", (10, 4), {"scale_grad_by_freq": True, "padding_idx": 8}, [(2, 6)]),
]

ACTIVATIONS = [
    case("ReLU"),
    case("GELU"),
    case("GELU", (), {"approximate": "tanh"}),
    case("SiLU"),
    case("Tanh"),
    case("Sigmoid"),
    case("Softmax", (1,)),
    case("Softmax", (0,), None, [(3, 4, 2)]),
    case("LogSoftmax", (-1,), None, [(2, 3, 4)]),
    case("LeakyReLU"),
    case("LeakyReLU", (0.2,)),
    case("ELU"),
    case("ELU", (0.5,)),
    case("Mish"),
    case("Hardswish"),
    case("Softplus"),
    case("Softplus", (2.0, 1.0)),
    case("ReLU6"),
    case("Hardtanh", (-0.5, 0.7)),
    case("Hardsigmoid"),
    case("CELU", (0.7,)),
    case("SELU"),
    case("Softsign"),
    case("LogSigmoid"),
    case("Softmin", (1,)),
    case("GLU", (), None, [(3, 4)]),
]


def _inputs(name, shapes, dtype, rng):
    if name == "Embedding":
        idx = rng.integers(0, 10, size=shapes[0])
        idx.flat[:2] = [0, 8]  # the padding rows (0 and -2) appear
        return [idx.astype(np.int64)]
    return [rng.standard_normal(s).astype(dtype) * 2 for s in shapes]


@pytest.mark.parametrize("name, args, kwargs, shapes, forward, dtype", LAYERS + ACTIVATIONS)
def test_layer_matches_torch(device, rng, name, args, kwargs, shapes, forward, dtype):
    ours, theirs = pair(name, *args, device=device, dtype=dtype, **kwargs)
    check_module(ours, theirs, _inputs(name, shapes, dtype, rng), device, forward, dtype=dtype)


@pytest.mark.parametrize("name, args, kwargs, shapes, forward, dtype", LAYERS[:24])
def test_layer_float64(device, rng, name, args, kwargs, shapes, forward, dtype):
    """The same layers in float64 with tight tolerances: formula slips hide in float32 noise."""
    ours, theirs = pair(name, *args, device=device, dtype="float64", **kwargs)
    inputs = _inputs(name, shapes, "float64", rng)
    check_module(ours, theirs, inputs, device, forward, dtype="float64")


@pytest.mark.parametrize(
    "name, kwargs, shape",
    [
        ("BatchNorm1d", {}, (4, 3)),
        ("BatchNorm1d", {"momentum": 0.3}, (4, 3, 5)),
        ("BatchNorm1d", {"affine": False}, (5, 3)),
        ("BatchNorm1d", {"momentum": None}, (4, 3, 2)),
        ("BatchNorm1d", {"track_running_stats": False}, (4, 3, 2)),
        ("BatchNorm2d", {}, (2, 3, 4, 5)),
        ("BatchNorm2d", {"eps": 1e-3, "affine": False}, (3, 3, 2, 2)),
        ("BatchNorm2d", {"track_running_stats": False}, (2, 3, 4, 5)),
    ],
)
def test_batchnorm_train_then_eval(device, rng, name, kwargs, shape):
    """Three training steps (outputs, gradients, running stats), then eval uses the stats."""
    ours, theirs = pair(name, 3, device=device, **kwargs)
    for _ in range(3):
        x = rng.standard_normal(shape).astype(np.float32) * 3 + 1
        check_module(ours, theirs, [x], device)
        for key, value in theirs.state_dict().items():
            assert_close(ours.state_dict()[key], value, key)
        ours.zero_grad()
        theirs.zero_grad()
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    check_module(ours, theirs, [x], device)


def test_dropout_train_and_eval(device):
    drop = ember.nn.Dropout(0.25)
    x = ember.ones(200, 100, device=device, requires_grad=True)
    out = drop(x)
    kept = out != 0
    fraction = kept.float().mean().item()
    assert 0.72 < fraction < 0.78
    np.testing.assert_allclose(out[kept].detach().cpu().numpy(), 1 / 0.75, rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), out.detach().cpu().numpy(), rtol=1e-6)
    drop.eval()
    assert drop(x) is x or bool((drop(x) == x).all())
    assert repr(drop) == repr(torch.nn.Dropout(0.25))


def test_dropout_edges(device):
    x = ember.randn(5, 4, device=device)
    assert bool((ember.nn.Dropout(0.0)(x) == x).all())
    assert bool((ember.nn.Dropout(1.0)(x) == 0).all())
    y = x.clone()
    out = ember.nn.Dropout(0.5, inplace=True)(y)
    assert out.data_ptr() == y.data_ptr()
    with pytest.raises(ValueError, match="between 0 and 1"):
        ember.nn.Dropout(1.5)


@pytest.mark.parametrize(
    "kwargs, offsets, per_sample",
    [
        ({"mode": "mean"}, None, False),
        ({"mode": "sum"}, None, True),
        ({"mode": "max"}, None, False),
        ({"mode": "mean"}, [0, 2, 2, 5], False),
        ({"mode": "sum"}, [0, 3, 4], True),
        ({"mode": "max"}, [0, 1, 6], False),
        ({"mode": "sum", "include_last_offset": True}, [0, 2, 5, 8], False),
        ({"mode": "mean", "padding_idx": 1}, [0, 3, 5], False),
        ({"mode": "sum", "padding_idx": 1}, None, False),
    ],
)
def test_embedding_bag(device, rng, kwargs, offsets, per_sample):
    ours, theirs = pair("EmbeddingBag", 10, 3, device=device, **kwargs)
    shape = (4, 3) if offsets is None else (8,)
    idx = rng.integers(0, 10, size=shape).astype(np.int64)
    idx.flat[:2] = [1, 1]
    inputs = [idx]
    if offsets is not None:
        inputs.append(np.array(offsets, dtype=np.int64))
    elif per_sample:
        inputs.append(None)
    if per_sample:
        inputs.append(rng.standard_normal(shape).astype(np.float32))
    check_module(ours, theirs, inputs, device)


def test_embedding_from_pretrained_and_max_norm(device, rng):
    weight = rng.standard_normal((6, 3)).astype(np.float32) * 3
    ours = ember.nn.Embedding.from_pretrained(to_ember(weight, device), max_norm=1.0)
    theirs = torch.nn.Embedding.from_pretrained(to_torch(weight), max_norm=1.0)
    assert not ours.weight.requires_grad
    idx = np.array([[0, 2], [2, 5]], dtype=np.int64)
    assert_close(ours(to_ember(idx, device)), theirs(to_torch(idx)), "output")
    assert_close(ours.weight, theirs.weight, "renormalised weight")
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name, args, kwargs, shapes, forward, dtype", LAYERS + ACTIVATIONS)
def test_layer_repr_matches_torch(name, args, kwargs, shapes, forward, dtype):
    torch.manual_seed(0)
    assert repr(getattr(ember.nn, name)(*args, **kwargs)) == repr(
        getattr(torch.nn, name)(*args, **kwargs)
    )
