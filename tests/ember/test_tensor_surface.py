"""Tensor methods beyond the op table (ember/_tensor_surface.py and the in-place alias
spellings), each against PyTorch: fill_diagonal_ (with wrap, N-d, through autograd), is_nonzero,
the device-type predicates, the legacy ``new`` constructor, apply_/map_/map2_, and the method
spellings of functional ops."""

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 3), (4, 2), (2, 5), (7, 3), (3, 3, 3)]


def _pair(shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(values), torch.tensor(values)


@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_fill_diagonal_matches_torch(shape, wrap):
    ours, theirs = _pair(shape)
    assert ours.fill_diagonal_(-2.5, wrap=wrap) is ours
    theirs.fill_diagonal_(-2.5, wrap=wrap)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_fill_diagonal_of_a_view_and_through_autograd():
    ours, theirs = _pair((6, 6))
    ours[1:, ::2].fill_diagonal_(9.0)
    theirs[1:, ::2].fill_diagonal_(9.0)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    leaf = ember.ones(3, 3, requires_grad=True)
    y = leaf * 2
    y.fill_diagonal_(0.0)
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), 2 * (1 - np.eye(3)))


@pytest.mark.parametrize("shape", [(3,), (2, 3, 3)])
def test_fill_diagonal_refuses_as_torch(shape):
    with pytest.raises(RuntimeError) as want:
        torch.zeros(shape).fill_diagonal_(1)
    with pytest.raises(RuntimeError) as got:
        ember.zeros(shape).fill_diagonal_(1)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("values", [[0.0], [3], [[True]], [1, 2], []])
def test_is_nonzero(values):
    try:
        want = torch.tensor(values).is_nonzero()
    except RuntimeError as exc:
        with pytest.raises(RuntimeError, match=str(exc)):
            ember.tensor(values).is_nonzero()
        return
    assert ember.tensor(values).is_nonzero() is want


def test_device_type_predicates():
    x = ember.ones(2)
    for name in ("is_xpu", "is_mps", "is_mkldnn", "is_quantized", "is_nested", "is_vulkan"):
        assert getattr(x, name) is getattr(torch.ones(2), name) is False
    assert x.const_data_ptr() == x.data_ptr()


def test_is_xpu_on_an_xpu_tensor():
    from ..conftest import unavailable_reason

    if unavailable_reason("xpu"):
        pytest.skip(unavailable_reason("xpu"))
    assert ember.ones(2, device="xpu").is_xpu


NEW_CALLS = [(), (2, 3), ([1, 2],), ((2, 3),), ("size",)]


@pytest.mark.parametrize("args", NEW_CALLS, ids=str)
def test_legacy_new_matches_torch(args):
    ours, theirs = ember.arange(4.0, dtype=ember.float64), torch.arange(4.0, dtype=torch.float64)
    if args == ("size",):
        a, b = ours.new(ember.Size([2, 3])), theirs.new(torch.Size([2, 3]))
    else:
        a, b = ours.new(*args), theirs.new(*args)
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == ember.float64
    if args in (([1, 2],), ((2, 3),)):
        assert a.tolist() == b.tolist()


def test_legacy_new_of_a_tensor_shares_it():
    x = ember.arange(4.0)
    assert x.new(x).data_ptr() == x.data_ptr()
    with pytest.raises(TypeError):
        x.new(ember.arange(4))  # another dtype


def test_apply_and_map_match_torch():
    ours, theirs = _pair((2, 3))
    ours.apply_(lambda v: v * 10 + 1)
    theirs.apply_(lambda v: v * 10 + 1)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    other_e, other_t = _pair((3,), seed=1)
    ours.map_(other_e, lambda a, b: a - b)
    theirs.map_(other_t, lambda a, b: a - b)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    ours.map2_(other_e, other_e, lambda a, b, c: a + b * c)
    theirs.map2_(other_t, other_t, lambda a, b, c: a + b * c)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_apply_and_map_of_a_0d_tensor():
    for lib in (ember, torch):
        x = lib.tensor(3.0)
        x.apply_(lambda v: v * 2)
        x.map_(lib.tensor(1.0), lambda a, b: a + b)
        assert x.item() == 7.0


def test_apply_is_cpu_only():
    with pytest.raises(TypeError, match="apply_ is only implemented on CPU tensors"):
        ember.ones(2, device="ref").apply_(lambda v: v)


ALIASES = ["absolute_", "divide_", "multiply_", "subtract_", "greater_", "greater_equal_",
           "less_", "less_equal_", "not_equal_", "arctan2_"]  # fmt: skip


@pytest.mark.parametrize("name", ALIASES)
def test_in_place_alias_spellings(name):
    ours, theirs = _pair((2, 3))
    other_e, other_t = _pair((2, 3), seed=2)
    args_e, args_t = ((), ()) if name == "absolute_" else ((other_e,), (other_t,))
    getattr(ours, name)(*args_e)
    getattr(theirs, name)(*args_t)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_method_spellings_of_functional_ops():
    ours, theirs = _pair((2, 3))
    w_e, w_t = ember.tensor([0.25]), torch.tensor([0.25])
    np.testing.assert_allclose(ours.prelu(w_e).numpy(), theirs.prelu(w_t).numpy())
    np.testing.assert_allclose(ours.hardshrink(0.3).numpy(), theirs.hardshrink(0.3).numpy())
    v_e, v_t = _pair((4,), seed=3)
    np.testing.assert_allclose(ours[0].ger(v_e).numpy(), theirs[0].ger(v_t).numpy(), rtol=1e-6)
    assert ours.to_dense() is ours and theirs.to_dense() is theirs


def test_top_level_is_nonzero_has_torchs_errors():
    for values in ([], [1, 2]):
        with pytest.raises(RuntimeError) as want:
            torch.is_nonzero(torch.tensor(values))
        with pytest.raises(RuntimeError) as got:
            ember.is_nonzero(ember.tensor(values))
        assert str(got.value) == str(want.value)


def test_interop_threads_follow_torchs_rules(monkeypatch):
    from ember import _frontends

    monkeypatch.setattr(_frontends, "_INTEROP", {"threads": None, "fixed": False})
    assert ember.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        ember.set_num_interop_threads(0)
    ember.set_num_interop_threads(1)
    assert ember.get_num_interop_threads() == 1
    with pytest.raises(RuntimeError) as got:
        ember.set_num_interop_threads(2)
    assert "cannot set number of interop threads" in str(got.value)
