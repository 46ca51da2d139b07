"""PyTorch's legacy tensor types (ember/_legacy_types.py) against torch's: construction from
sizes, a Size, data and a tensor; isinstance; x.type(...) with a type or its name;
set_default_tensor_type; the device forms (ember.cuda.FloatTensor) and their errors."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember import _legacy_types

KINDS = list(_legacy_types.KINDS)


@pytest.mark.parametrize("kind", KINDS)
def test_every_type_torch_has_with_its_dtype(kind):
    ours, theirs = getattr(ember, f"{kind}Tensor"), getattr(torch, f"{kind}Tensor")
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert repr(ours) == repr(theirs).replace("torch", "ember")
    assert ours.is_cuda is theirs.is_cuda is False
    assert (
        getattr(ember.cuda, f"{kind}Tensor").is_cuda is getattr(torch.cuda, f"{kind}Tensor").is_cuda
    )


CALLS = [(), (2, 3), ([1, 2, 3],), ((2, 3),), ([[1, 0], [0, 1]],), ("size",)]


@pytest.mark.parametrize("kind", ["Float", "Long", "Bool", "Double"])
@pytest.mark.parametrize("args", CALLS, ids=str)
def test_construction_matches_torch(kind, args):
    ours, theirs = getattr(ember, f"{kind}Tensor"), getattr(torch, f"{kind}Tensor")
    if args == ("size",):
        a, b = ours(ember.Size([2, 3])), theirs(torch.Size([2, 3]))
    else:
        a, b = ours(*args), theirs(*args)
    assert tuple(a.shape) == tuple(b.shape) and a.device.type == "cpu"
    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    if args and isinstance(args[0], (list, tuple)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_tensor_of_the_type_is_aliased_another_refused():
    x = ember.ones(3)
    alias = ember.FloatTensor(x)
    assert alias.data_ptr() == x.data_ptr()
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.arange(3))
    with pytest.raises(TypeError, match=r"expected ember\.float32"):
        ember.FloatTensor(ember.arange(3))


def test_isinstance_compares_dtype_and_device():
    for lib in (ember, torch):
        x = lib.ones(2)
        assert isinstance(x, lib.FloatTensor)
        assert not isinstance(x, lib.DoubleTensor)
        assert not isinstance(x, lib.cuda.FloatTensor)
        assert isinstance(x.long(), lib.LongTensor)
        assert not isinstance(3, lib.FloatTensor)


@pytest.mark.parametrize("target", ["LongTensor", "torch.DoubleTensor", "ember.HalfTensor"])
def test_type_converts_to_a_type_or_its_name(target):
    values = np.array([1.5, -2.25], dtype=np.float32)
    theirs_target = (
        getattr(torch, target) if "." not in target else target.replace("ember", "torch")
    )
    ours_target = getattr(ember, target) if "." not in target else target
    got, want = ember.tensor(values).type(ours_target), torch.tensor(values).type(theirs_target)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]


def test_type_to_another_device_type():
    moved = ember.ones(2).type("ember.ref.LongTensor")
    assert moved.device.type == "ref" and moved.dtype == ember.int64
    assert isinstance(moved, ember._accelerator.module("ref").LongTensor)
    assert not isinstance(moved, ember.LongTensor)
    back = moved.type(ember.FloatTensor)
    assert back.device.type == "cpu" and back.tolist() == [1.0, 1.0]


def test_set_default_tensor_type_as_torch():
    before = ember.get_default_dtype()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.ones(1).dtype == ember.float64
        assert "set_default_tensor_type() is deprecated" in str(caught[0].message)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.set_default_tensor_type("torch.FloatTensor")
            assert ember.ones(1).dtype == ember.float32
            with pytest.raises(TypeError) as want:
                torch.set_default_tensor_type(torch.LongTensor)
            with pytest.raises(TypeError) as got:
                ember.set_default_tensor_type(ember.LongTensor)
        assert str(got.value) == str(want.value)
    finally:
        ember.set_default_dtype(before)


def test_device_mismatch_raises_torchs_error():
    with pytest.raises(RuntimeError) as want:
        torch.FloatTensor([1, 2], device="cuda")
    with pytest.raises(RuntimeError) as got:
        ember.FloatTensor([1, 2], device="cuda")
    assert str(got.value) == str(want.value)
    assert not hasattr(ember.cuda, "NothingTensor")
