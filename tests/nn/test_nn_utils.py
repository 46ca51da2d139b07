"""The rest of nn.utils against PyTorch: gradient-norm helpers, vector_to_parameters, the
deprecated hook-based weight_norm and spectral_norm, conv/linear + batch-norm fusion,
skip_init and the memory-format converters."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.utils as U

from .oracle import assert_close, check_module, copy_state, to_ember, to_torch

torch = pytest.importorskip("torch")
TU = torch.nn.utils


def _grads(rng, lib, convert):
    tensors = []
    for shape in ((3, 4), (5,), (2, 2, 2)):
        t = lib.zeros(shape, requires_grad=True)
        t.grad = convert(rng.standard_normal(shape).astype(np.float32) * 3)
        tensors.append(t)
    return tensors


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, float("inf")])
def test_total_norm_and_clipping(norm_type):
    ours = _grads(np.random.default_rng(0), ember, to_ember)
    theirs = _grads(np.random.default_rng(0), torch, to_torch)
    total = U.get_total_norm([p.grad for p in ours], norm_type)
    expected = TU.get_total_norm([p.grad for p in theirs], norm_type)
    assert_close(total, expected, "total norm")
    U.clip_grads_with_norm_(ours, 1.5, total)
    TU.clip_grads_with_norm_(theirs, 1.5, expected)
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad, "clipped gradient")
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        U.clip_grad_norm(ours, 0.5, norm_type)
    with pytest.raises(RuntimeError, match="non-finite"):
        bad = ember.tensor([float("nan"), 1.0])
        U.get_total_norm([bad], error_if_nonfinite=True)
    assert float(U.get_total_norm([])) == 0.0


def test_vector_to_parameters_roundtrip():
    layer = ember.nn.Linear(3, 2)
    vector = ember.arange(8.0)
    U.vector_to_parameters(vector, layer.parameters())
    np.testing.assert_array_equal(
        U.parameters_to_vector(layer.parameters()).detach().numpy(), vector.numpy()
    )
    with pytest.raises(TypeError, match=r"expected torch\.Tensor"):
        U.vector_to_parameters([1.0], layer.parameters())


@pytest.mark.parametrize(
    "name, args, kwargs, shape",
    [
        ("Linear", (4, 3), {}, (2, 4)),
        ("Conv2d", (2, 3, 3), {"dim": None}, (1, 2, 5, 5)),
        ("Conv1d", (2, 4, 3), {"dim": 1}, (2, 2, 6)),
    ],
)
def test_legacy_weight_norm(rng, name, args, kwargs, shape):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args)
    ours = getattr(ember.nn, name)(*args)
    copy_state(theirs, ours)
    with pytest.warns(FutureWarning):
        TU.weight_norm(theirs, **kwargs)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        U.weight_norm(ours, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    check_module(ours, theirs, [rng.standard_normal(shape).astype(np.float32)], "cpu")
    U.remove_weight_norm(ours)
    TU.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_close(ours.weight, theirs.weight, "weight after removal")
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        U.remove_weight_norm(ours)


@pytest.mark.parametrize(
    "name, args, kwargs, shape",
    [
        ("Linear", (4, 3), {}, (2, 4)),
        ("ConvTranspose2d", (2, 3, 3), {"n_power_iterations": 3}, (1, 2, 4, 4)),
    ],
)
def test_legacy_spectral_norm(rng, name, args, kwargs, shape):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args).double()
    ours = getattr(ember.nn, name)(*args).double()
    copy_state(theirs, ours)
    TU.spectral_norm(theirs, **kwargs)
    U.spectral_norm(ours, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_state(theirs, ours)  # the power iteration starts from random vectors
    for _ in range(2):  # each training forward moves u and v
        check_module(ours, theirs, [rng.standard_normal(shape)], "cpu", dtype="float64")
        for key, value in theirs.state_dict().items():
            assert_close(ours.state_dict()[key], value, key, dtype="float64")
        ours.zero_grad()
        theirs.zero_grad()
    U.remove_spectral_norm(ours)
    TU.remove_spectral_norm(theirs)
    assert_close(ours.weight, theirs.weight, "weight after removal", dtype="float64")


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn(rng, transpose):
    torch.manual_seed(0)
    conv_name = "ConvTranspose2d" if transpose else "Conv2d"
    theirs = [getattr(torch.nn, conv_name)(2, 3, 3), torch.nn.BatchNorm2d(3)]
    ours = [getattr(ember.nn, conv_name)(2, 3, 3), ember.nn.BatchNorm2d(3)]
    theirs[1].running_mean.uniform_(-1, 1)
    theirs[1].running_var.uniform_(0.5, 2)
    theirs[1].weight.data.uniform_(0.5, 2)
    for a, b in zip(theirs, ours):
        copy_state(a, b)
        a.eval()
        b.eval()
    fused = U.fuse_conv_bn_eval(*ours, transpose=transpose)
    expected = TU.fuse_conv_bn_eval(*theirs, transpose=transpose)
    x = rng.standard_normal((2, 2, 5, 5)).astype(np.float32)
    assert_close(fused(to_ember(x)), expected(to_torch(x)), "fused conv")
    assert_close(fused(to_ember(x)), ours[1](ours[0](to_ember(x))), "fused vs separate")


def test_fuse_linear_bn(rng):
    torch.manual_seed(0)
    theirs = [torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)]
    ours = [ember.nn.Linear(4, 3), ember.nn.BatchNorm1d(3)]
    theirs[1].running_var.uniform_(0.5, 2)
    for a, b in zip(theirs, ours):
        copy_state(a, b)
        a.eval()
        b.eval()
    x = rng.standard_normal((5, 4)).astype(np.float32)
    fused = U.fuse_linear_bn_eval(*ours)
    assert_close(fused(to_ember(x)), TU.fuse_linear_bn_eval(*theirs)(to_torch(x)), "fused linear")
    ours[0].train()
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        U.fuse_linear_bn_eval(*ours)


def test_skip_init_draws_no_random_numbers():
    ember.manual_seed(3)
    expected = ember.rand(4)
    ember.manual_seed(3)
    layer = U.skip_init(ember.nn.Linear, 5, 4, bias=True)
    assert tuple(layer.weight.shape) == (4, 5) and isinstance(layer, ember.nn.Linear)
    np.testing.assert_array_equal(ember.rand(4).numpy(), expected.numpy())
    with pytest.raises(RuntimeError, match="Expected a Module"):
        U.skip_init(int)
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        U.skip_init(ember.nn.ReLU)


def test_memory_format_converters_keep_values():
    model = ember.nn.Sequential(ember.nn.Conv2d(2, 3, 3), ember.nn.Conv3d(3, 2, 1))
    before = [p.detach().clone() for p in model.parameters()]
    assert U.convert_conv2d_weight_memory_format(model, "channels_last") is model
    assert U.convert_conv3d_weight_memory_format(model, "channels_last_3d") is model
    for a, b in zip(before, model.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())
