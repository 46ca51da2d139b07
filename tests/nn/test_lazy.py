"""Lazy modules against PyTorch: the first forward infers the input size, materialises and
initialises the placeholders, and turns the module into the plain layer; after that (same
weights) outputs and gradients agree. Uninitialized parameters behave as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

from .oracle import check_module, copy_state, to_ember, to_torch

torch = pytest.importorskip("torch")

LAZY = [
    ("LazyLinear", (3,), {}, (4, 5)),
    ("LazyLinear", (2,), {"bias": False}, (2, 3, 4)),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7)),
    ("LazyConv2d", (4, 3), {"stride": 2, "groups": 2}, (2, 6, 7, 6)),
    ("LazyConv3d", (2, 2), {"bias": False}, (1, 3, 3, 4, 3)),
    ("LazyConv2d", (3, 2), {}, (2, 4, 5)),  # unbatched: in_channels from dim 0
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (2, 3), {"output_padding": 1, "stride": 2}, (1, 3, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 2, 2, 3, 2)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), {"momentum": 0.3}, (2, 2, 3, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5)),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"affine": False}, (2, 2, 3, 2, 2)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAZY, ids=[f"{c[0]}-{c[2]}" for c in LAZY])
def test_lazy_module_matches_torch(device, rng, name, args, kwargs, shape):
    ours = getattr(ember.nn, name)(*args, **kwargs).to(device)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert ours.has_uninitialized_params() and theirs.has_uninitialized_params()
    x = rng.standard_normal(shape).astype(np.float32)
    ours(to_ember(x, device))
    theirs(to_torch(x))
    assert type(ours).__name__ == type(theirs).__name__ == name[4:]
    assert repr(ours) == repr(theirs)
    assert not any(is_lazy(p) for p in ours.parameters())
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert tuple(a.shape) == tuple(b.shape), key
    copy_state(theirs, ours, device)
    check_module(ours, theirs, [x], device)


def test_uninitialized_parameter_behaviour():
    layer = ember.nn.LazyLinear(3)
    assert isinstance(layer.weight, UninitializedParameter) and is_lazy(layer.weight)
    assert isinstance(layer.weight, ember.nn.Parameter) and layer.weight.requires_grad
    assert repr(layer.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = layer.weight.shape
    with pytest.raises(ValueError, match="uninitialized parameter in numel"):
        layer.weight.numel()
    state = layer.state_dict()
    assert list(state) == ["weight", "bias"] and is_lazy(state["weight"])
    assert repr(UninitializedBuffer()) == "<UninitializedBuffer>"


def test_lazy_converts_before_initialisation_and_loads_state():
    layer = ember.nn.LazyLinear(3).double()
    layer(ember.randn(2, 4, dtype=ember.float64))
    assert layer.weight.dtype is ember.float64 and type(layer) is ember.nn.Linear
    source = torch.nn.Linear(4, 3)
    target = ember.nn.LazyLinear(3)
    target.load_state_dict({k: to_ember(v) for k, v in source.state_dict().items()})
    assert tuple(target.weight.shape) == (3, 4) and not target.has_uninitialized_params()
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(
        target(to_ember(x)).detach().numpy(), source(to_torch(x)).detach().numpy(), rtol=1e-6
    )
    norm = ember.nn.LazyBatchNorm1d()
    norm.load_state_dict({k: to_ember(v) for k, v in torch.nn.BatchNorm1d(5).state_dict().items()})
    assert tuple(norm.running_mean.shape) == (5,)


def test_lazy_errors():
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D \\(batched\\)"):
        ember.nn.LazyConv2d(2, 3)(ember.randn(5, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ember.nn.LazyConv1d(4, 3, groups=2)(ember.randn(1, 3, 5))
    initialised = ember.nn.Linear(4, 3)
    with pytest.raises(RuntimeError, match="uninitialized"):
        initialised.load_state_dict(ember.nn.LazyLinear(3).state_dict())
