"""nn.utils.parametrize and nn.utils.parametrizations against PyTorch: registering, state-dict
keys, values and gradients (float64) through the parametrized layers, caching, assignment
through right_inverse, removal, and the shipped orthogonal / weight_norm / spectral_norm."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember
import ember.nn.utils.parametrizations as EP
import ember.nn.utils.parametrize as P

from .oracle import assert_close, check_module, copy_state, to_ember, to_torch

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrizations


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def _scaled(lib):
    class Scaled(lib.nn.Module):
        def forward(self, x):
            return x * 2

        def right_inverse(self, a):
            return a / 2

    return Scaled()


def _pair(name, *args, device="cpu"):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args).double()
    ours = getattr(ember.nn, name)(*args).double()
    copy_state(theirs, ours)
    return ours.to(device), theirs


def test_register_and_remove_like_torch(device, rng):
    ours, theirs = _pair("Linear", 3, 3, device=device)
    original = ours.weight
    for lib, module in ((ember, ours), (torch, theirs)):
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _symmetric(lib))
        lib.nn.utils.parametrize.register_parametrization(module, "weight", _scaled(lib))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.parametrizations.weight.original is original  # optimizers keep it
    assert repr(ours) == repr(theirs).replace("torch", "ember")
    x = rng.standard_normal((4, 3))
    check_module(ours, theirs, [x], device, dtype="float64")
    value = rng.standard_normal((3, 3))
    value = value + value.T
    ours.weight, theirs.weight = to_ember(value, device), to_torch(value)
    assert_close(
        ours.parametrizations.weight.original,
        theirs.parametrizations.weight.original,
        dtype="float64",
    )
    assert P.is_parametrized(ours) and P.is_parametrized(ours, "weight")
    assert not P.is_parametrized(ours, "bias")
    assert P.type_before_parametrizations(ours) is ember.nn.Linear
    P.remove_parametrizations(ours, "weight")
    torch.nn.utils.parametrize.remove_parametrizations(theirs, "weight")
    assert type(ours) is ember.nn.Linear and ours.weight is original
    assert_close(ours.weight, theirs.weight, dtype="float64")


def test_cached_and_serialisation():
    layer = ember.nn.Linear(3, 3)
    P.register_parametrization(layer, "weight", _symmetric(ember))
    assert layer.weight is not layer.weight
    with P.cached():
        assert layer.weight is layer.weight
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(layer)
    clone = copy.deepcopy(layer)
    assert type(clone).__name__ == "ParametrizedLinear"
    assert clone.parametrizations.weight.original is not layer.parametrizations.weight.original


def test_parametrize_errors():
    class Shrink(ember.nn.Module):
        def forward(self, x):
            return x[:1]

    layer = ember.nn.Linear(3, 3)
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(layer, "weight", Shrink())
    P.register_parametrization(layer, "weight", Shrink(), unsafe=True)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(layer, "nothing", Shrink())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        P.remove_parametrizations(layer, "bias")


ORTHOGONAL = [
    ((4, 4), None, True),
    ((4, 4), "householder", False),
    ((3, 5), "matrix_exp", True),
    ((5, 3), None, False),
    ((5, 3), "householder", True),
]


@pytest.mark.parametrize("shape, orthogonal_map, trivial", ORTHOGONAL)
def test_orthogonal(rng, shape, orthogonal_map, trivial):
    ours, theirs = _pair("Linear", *shape)
    TP.orthogonal(theirs, orthogonal_map=orthogonal_map, use_trivialization=trivial)
    EP.orthogonal(ours, orthogonal_map=orthogonal_map, use_trivialization=trivial)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_close(ours.weight, theirs.weight, "orthogonalised weight", dtype="float64")
    copy_state(theirs, ours)  # a random completion of non-square bases
    check_module(ours, theirs, [rng.standard_normal((2, shape[0]))], "cpu", dtype="float64")
    w = ours.weight.detach().numpy()
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(min(w.shape)), atol=1e-12)


def test_orthogonal_assignment_and_training():
    torch.manual_seed(0)
    layer = EP.orthogonal(ember.nn.Linear(4, 4).double())
    q = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))[0]
    layer.weight = ember.tensor(q)
    np.testing.assert_allclose(layer.weight.detach().numpy(), q, atol=1e-12)
    optimizer = ember.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        layer(ember.randn(8, 4, dtype=ember.float64)).pow(2).sum().backward()
        optimizer.step()
    w = layer.weight.detach().numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-12)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        EP.orthogonal(ember.nn.Linear(3, 3), orthogonal_map="qr")


NORMS = [
    ("Linear", (4, 3), "weight_norm", {}, (2, 4)),
    ("Conv2d", (2, 3, 3), "weight_norm", {"dim": None}, (1, 2, 5, 5)),
    ("Conv1d", (2, 3, 3), "weight_norm", {"dim": 1}, (1, 2, 5)),
    ("Linear", (4, 3), "spectral_norm", {}, (2, 4)),
    ("ConvTranspose2d", (2, 3, 3), "spectral_norm", {"n_power_iterations": 2}, (1, 2, 4, 4)),
    ("Conv2d", (2, 3, 3), "spectral_norm", {"dim": 1, "eps": 1e-6}, (1, 2, 5, 5)),
]


@pytest.mark.parametrize("name, args, fn, kwargs, shape", NORMS)
def test_weight_and_spectral_norm(rng, name, args, fn, kwargs, shape):
    ours, theirs = _pair(name, *args)
    getattr(TP, fn)(theirs, **kwargs)
    getattr(EP, fn)(ours, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_state(theirs, ours)  # spectral_norm's power-iteration start is random
    for training in (True, False):
        ours.train(training)
        theirs.train(training)
        check_module(ours, theirs, [rng.standard_normal(shape)], "cpu", dtype="float64")
        for key, value in theirs.state_dict().items():  # the power iteration's vectors
            assert_close(ours.state_dict()[key], value, key, dtype="float64")
        ours.zero_grad()
        theirs.zero_grad()


def test_weight_norm_loads_old_checkpoints():
    torch.manual_seed(0)
    old = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))  # the deprecated layout
    layer = EP.weight_norm(ember.nn.Linear(3, 2))
    layer.load_state_dict({k: to_ember(v) for k, v in old.state_dict().items()})
    x = np.ones((1, 3), np.float32)
    assert_close(layer(to_ember(x)), old(to_torch(x)), "old weight_norm checkpoint")
