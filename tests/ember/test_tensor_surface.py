"""Tensor methods beyond the op table (ember/_tensor_surface.py and the in-place alias
spellings), each against PyTorch: fill_diagonal_ (with wrap, N-d, through autograd), is_nonzero,
the device-type predicates, the legacy ``new`` constructor, apply_/map_/map2_, and the method
spellings of functional ops."""

import functools

import numpy as np
import pytest
import torch

import ember

from .same_error import assert_same_error

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


# ---- autograd bookkeeping, dim_order, set_, the deprecated resize -----------------------------


_errors = functools.partial(assert_same_error, first_line=True)


def _version_trace(lib):
    """In-place writes through the tensor, a view, detach() and indexing: the count after each."""
    x = lib.ones(4) + 0
    seen = [x._version]
    x.add_(1)
    seen.append(x._version)
    view = x[1:]
    view.mul_(2)
    seen += [x._version, view._version]
    x[0] = 5
    x.copy_(lib.zeros(4))
    x.detach().zero_()
    with lib.no_grad():
        x.sub_(1)
    seen += [x._version, (x + 1)._version]
    return seen


def test_version_counts_writes_shared_by_views():
    assert _version_trace(ember) == _version_trace(torch)


def test_version_guards_saved_tensors_and_is_read_only():
    x = ember.ones(3, requires_grad=True)
    y = x * 1
    z = y.sin()  # saves y
    before = y._version
    y.add_(1)
    assert y._version == before + 1
    with pytest.raises(RuntimeError):
        z.sum().backward()
    with pytest.raises(AttributeError):
        y._version = 0


def _inference_flags(lib):
    x = lib.ones(2)
    with lib.inference_mode():
        made, summed, view_of_normal, big = lib.ones(2), x + 1, x[1:], lib.zeros(1 << 16)
        with lib.inference_mode(False):
            inner = lib.ones(1)
    return [
        made.is_inference(), summed.is_inference(), view_of_normal.is_inference(),
        big.is_inference(), inner.is_inference(), x.is_inference(), made[1:].is_inference(),
        made.detach().is_inference(), made.clone().is_inference(), (made + 1).is_inference(),
        lib.is_inference(made), lib.is_inference(x),
    ]  # fmt: skip


def test_is_inference_matches_torch():
    assert _inference_flags(ember) == _inference_flags(torch)
    with ember.inference_mode(), torch.inference_mode():
        mine, theirs = ember.ones(1), torch.ones(1)
    _errors(lambda: mine._version, lambda: theirs._version)
    _errors(lambda: ember.is_inference(3), lambda: torch.is_inference(3))


def test_is_inference_counter_closes_with_the_block():
    from ember import _inference

    before = _inference.OPEN.blocks
    with pytest.raises(ValueError), ember.inference_mode():
        assert _inference.OPEN.blocks == before + 1
        raise ValueError

    @ember.inference_mode()
    def made():
        return ember.ones(1)

    assert made().is_inference()
    assert _inference.OPEN.blocks == before
    assert not ember.ones(1).is_inference()


def test_is_same_size():
    for a, b in [((2, 3), (2, 3)), ((6,), (2, 3)), ((), ()), ((0,), (0, 1))]:
        assert ember.zeros(a).is_same_size(ember.zeros(b)) == torch.zeros(a).is_same_size(
            torch.zeros(b)
        )
    _errors(lambda: ember.zeros(1).is_same_size(3), lambda: torch.zeros(1).is_same_size(3))


def _output_nrs(lib):
    x = lib.ones(4, requires_grad=True)
    first, second = x.split(2)
    # (not unbind: ember records one UnbindBackward0 node per output, PyTorch one for all)
    values, indices = lib.sort(x * 2)
    low, high = lib.chunk(x * 2, 2)
    return [x.output_nr, first.output_nr, second.output_nr,
            values.output_nr, indices.output_nr, low.output_nr, high.output_nr,
            (x * 2).output_nr, high[1:].output_nr]  # fmt: skip


def test_output_nr():
    assert _output_nrs(ember) == _output_nrs(torch)


DIM_ORDER_CASES = [
    ((2, 3, 5, 7), None),
    ((2, 3, 5, 7), (0, 2, 1, 3)),
    ((2, 3, 5, 7), (0, 2, 3, 1)),
    ((1, 2, 3, 4), None),
    ((2, 1, 3), (2, 0, 1)),
    ((3, 3), (1, 0)),
    ((4,), None),
    ((), None),
    ((2, 2, 2), (2, 1, 0)),
]


def _laid_out(lib, shape, perm):
    base = lib.zeros(shape)
    if perm is None:
        return base
    physical = tuple(shape[p] for p in perm)
    inverse = [perm.index(i) for i in range(len(perm))]
    return lib.zeros(physical).permute(*inverse)


@pytest.mark.parametrize("shape,perm", DIM_ORDER_CASES)
@pytest.mark.parametrize("check", [False, True, [], "formats"])
def test_dim_order(shape, perm, check):
    mine, theirs = _laid_out(ember, shape, perm), _laid_out(torch, shape, perm)
    args = {}
    if check == "formats":
        args = dict(
            mine={"ambiguity_check": [ember.contiguous_format, ember.channels_last]},
            theirs={"ambiguity_check": [torch.contiguous_format, torch.channels_last]},
        )
    else:
        args = dict(mine={"ambiguity_check": check}, theirs={"ambiguity_check": check})
    try:
        expected = theirs.dim_order(**args["theirs"])
    except RuntimeError:
        _errors(lambda: mine.dim_order(**args["mine"]), lambda: theirs.dim_order(**args["theirs"]))
        return
    assert mine.dim_order(**args["mine"]) == expected


def test_dim_order_channels_last_and_bad_check():
    mine = ember.empty((2, 5, 7, 3)).permute(0, 3, 1, 2)  # channels-last strides
    theirs = torch.empty((2, 3, 5, 7), memory_format=torch.channels_last)
    assert mine.stride() == theirs.stride()
    assert mine.dim_order() == theirs.dim_order() == (0, 2, 3, 1)
    _errors(
        lambda: mine.dim_order(ambiguity_check="ILLEGAL"),
        lambda: theirs.dim_order(ambiguity_check="ILLEGAL"),
    )
    _errors(
        lambda: mine.dim_order(ambiguity_check=[1]), lambda: theirs.dim_order(ambiguity_check=[1])
    )


def _set_trace(lib):
    x = lib.zeros(3)
    source = lib.arange(6.0).view(2, 3).t()
    same = x.set_(source) is x
    geometry = (tuple(x.shape), x.stride(), x.storage_offset())
    x.add_(1)  # writes the source's memory
    y = lib.ones(2, 3)
    y.set_()
    z = lib.zeros(2)
    z.set_(source.untyped_storage(), 1, (2, 2), (1, 2))
    w = lib.zeros(2)
    w.set_(source=source.untyped_storage())
    v = lib.zeros(2)
    v.set_(source.untyped_storage(), 0, (2, 2))
    return [same, geometry, source.tolist(), tuple(y.shape), y.stride(), z.tolist(), w.tolist(),
            v.stride()]  # fmt: skip


def test_set_matches_torch():
    assert _set_trace(ember) == _set_trace(torch)


def test_set_grows_storage_and_errors():
    x = ember.zeros(2)
    x.set_(ember.ones(2).untyped_storage(), 0, (4,), (1,))
    assert x.shape == (4,) and x.untyped_storage().nbytes() == 16
    storage = lambda lib: lib.zeros(2).untyped_storage()  # noqa: E731
    bad_calls = [
        lambda lib: lib.zeros(2, dtype=lib.int64).set_(lib.zeros(2)),
        lambda lib: lib.zeros(2, requires_grad=True).set_(lib.zeros(2)),
        lambda lib: lib.zeros(2).set_(lib.zeros(2), 1),
        lambda lib: lib.zeros(2).set_(3),
        lambda lib: lib.zeros(2).set_(storage(lib), -1, (1,)),
        lambda lib: lib.zeros(2).set_(storage(lib), 0, (2,), (1, 2)),
    ]
    for make in bad_calls:
        _errors(lambda m=make: m(ember), lambda m=make: m(torch))


@pytest.mark.filterwarnings("ignore:non-inplace")
def test_deprecated_resize_and_resize_as():
    for lib in (ember, torch):
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            lib.arange(6.0).resize(2, 3)
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            lib.arange(6.0).resize_as(lib.zeros(3, 2))
    mine = ember.arange(6.0, requires_grad=True)
    theirs = torch.arange(6.0, requires_grad=True)
    out_mine, out_theirs = mine.resize(2, 3), theirs.resize(2, 3)
    assert out_mine.tolist() == out_theirs.tolist()
    (out_mine * ember.arange(6.0).view(2, 3)).sum().backward()
    (out_theirs * torch.arange(6.0).view(2, 3)).sum().backward()
    assert mine.grad.tolist() == theirs.grad.tolist()
    _errors(lambda: ember.ones(2).resize(3), lambda: torch.ones(2).resize(3))
    _errors(lambda: ember.ones(6).resize((3, 2)), lambda: torch.ones(6).resize((3, 2)))


def test_record_stream_on_cpu_raises_as_torch():
    _errors(lambda: ember.zeros(1).record_stream(None), lambda: torch.zeros(1).record_stream(None))
    with pytest.raises(NotImplementedError, match="aten::record_stream"):
        ember.zeros(1).record_stream(torch.Stream())
