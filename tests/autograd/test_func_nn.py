"""ember.func over the nn.functional rows (conv2d, group_norm, linear, the losses, attention)
against torch.func: per-sample gradients of a small CNN, jacrev/jacfwd of each row, a hessian
of cross_entropy. None of them may fall back to the per-sample loop."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 1, 6, 6)).astype(np.float32)
Y = RNG.integers(0, 3, 5)
Q = RNG.standard_normal((2, 3, 4))


@pytest.fixture(autouse=True)
def _no_loop_fallback():
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop")
        yield


def _cnn(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3), nn.GroupNorm(2, 4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3)
    )


def _per_sample_grads(lib, model):
    F = lib.nn.functional
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return F.cross_entropy(lib.func.functional_call(model, p, (x[None],)), y[None])

    x, y = (
        (torch.from_numpy(X), torch.from_numpy(Y))
        if lib is torch
        else (ember.tensor(X), ember.tensor(Y))
    )
    return lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def test_per_sample_gradients_of_a_cnn_match_torch_func():
    theirs_model, ours_model = _cnn(torch), _cnn(ember)
    ours_model.load_state_dict(
        {k: ember.from_numpy(v.detach().numpy()) for k, v in theirs_model.state_dict().items()}
    )
    ours, theirs = _per_sample_grads(ember, ours_model), _per_sample_grads(torch, theirs_model)
    assert sorted(ours) == sorted(theirs)
    for k in theirs:
        np.testing.assert_allclose(ours[k].numpy(), theirs[k].numpy(), rtol=1e-4, atol=1e-5)


ROWS = {
    "sdpa": lambda lib, x: lib.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True),
    "mse_loss": lambda lib, x: lib.nn.functional.mse_loss(x, x.detach() * 0.5),
    "huber_loss": lambda lib, x: lib.nn.functional.huber_loss(x, x.detach() * 0.5),
    "bce_with_logits": lambda lib, x: lib.nn.functional.binary_cross_entropy_with_logits(
        x, (x.detach() > 0).to(x.dtype)
    ),
    "bce": lambda lib, x: lib.nn.functional.binary_cross_entropy(
        x.sigmoid(), (x.detach() > 0).to(x.dtype)
    ),
    "linear": lambda lib, x: lib.nn.functional.linear(x, x[0].detach()),
    "conv1d": lambda lib, x: lib.nn.functional.conv1d(x, x[:1, :, :2].detach() * 0.5, padding=1),
}


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("name", sorted(ROWS))
def test_jacobians_of_functional_rows_match_torch_func(name, transform):
    fn = ROWS[name]
    ours = getattr(ember.func, transform)(lambda x: fn(ember, x))(ember.tensor(Q))
    theirs = getattr(torch.func, transform)(lambda x: fn(torch, x))(torch.tensor(Q))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-9)


def test_hessian_of_cross_entropy_matches_torch_func():
    def loss(lib):
        return lambda x: lib.nn.functional.cross_entropy(x, lib.tensor([0, 2]))

    ours = ember.func.hessian(loss(ember))(ember.tensor(Q[0, :2, :3]))
    theirs = torch.func.hessian(loss(torch))(torch.tensor(Q[0, :2, :3]))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-9)


def _batch_norm_net(lib):
    nn = lib.nn
    lib.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.BatchNorm1d(4))


def test_replace_all_batch_norm_modules_matches_torch_func():
    x = RNG.standard_normal((2, 3, 3)).astype(np.float32)
    theirs_net, ours_net = _batch_norm_net(torch), _batch_norm_net(ember)
    ours_net.load_state_dict(
        {k: ember.from_numpy(v.numpy()) for k, v in theirs_net.state_dict().items()}
    )
    found = []
    for lib, net in ((ember, ours_net), (torch, theirs_net)):
        assert lib.func.replace_all_batch_norm_modules_(net) is net
        bn = net[1]
        found.append(
            (bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.track_running_stats)
        )
        # each group of 3 samples normalised with its own statistics, under vmap
        params = {k: v.detach() for k, v in net.named_parameters()}
        out = lib.func.vmap(
            lambda p, b, lib=lib, net=net: lib.func.functional_call(net, p, (b,)),
            in_dims=(None, 0),
        )(params, lib.tensor(x))
        found.append(out.detach().numpy())
    assert found[0] == found[2] == (None, None, None, False)
    np.testing.assert_allclose(found[1], found[3], rtol=1e-5, atol=1e-6)


def test_debug_unwrap_matches_torch_func():
    shapes = []
    for lib in (ember, torch):
        seen = []

        def f(x, lib=lib, seen=seen):
            seen.append(tuple(lib.func.debug_unwrap(x).shape))
            seen.append(tuple(lib.func.debug_unwrap(x, recurse=False).shape))
            return x.sum()

        lib.func.vmap(lib.func.vmap(f))(lib.ones(2, 3, 4))
        assert lib.func.debug_unwrap(lib.ones(2)) is not None
        shapes.append(seen)
    assert shapes[0] == shapes[1]
