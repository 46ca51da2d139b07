"""Shapes and values a tensor cannot hold: one clear RuntimeError naming the op, with PyTorch's
wording, from every factory and every view that takes sizes (never OverflowError, a numpy
ValueError, ZeroDivisionError or StopIteration)."""

from __future__ import annotations

import pytest
import torch

import ember

HUGE = 2**62


def _both(make):
    """Run ``make`` with ember and with torch; return both exceptions (None when it worked)."""
    found = []
    for module in (ember, torch):
        try:
            make(module)
            found.append(None)
        except Exception as exc:
            found.append(exc)
    return found


# (id, call, phrase in ember's message, and in torch's: both raise RuntimeError)
OVERFLOWS = [
    ("empty-2^62", lambda m: m.empty(HUGE), "Storage size calculation overflowed"),
    ("empty-3d", lambda m: m.empty(2**31, 2**31, 4), "Storage size calculation overflowed"),
    ("empty-with-zero", lambda m: m.empty(HUGE, HUGE, 0), "Storage size calculation overflowed"),
    ("zeros", lambda m: m.zeros(HUGE), "Storage size calculation overflowed"),
    ("ones", lambda m: m.ones(HUGE, 2), "Storage size calculation overflowed"),
    ("full", lambda m: m.full((HUGE,), 1.0), "Storage size calculation overflowed"),
    ("rand", lambda m: m.rand(HUGE), "Storage size calculation overflowed"),
    ("randn", lambda m: m.randn(HUGE), "Storage size calculation overflowed"),
    ("randint", lambda m: m.randint(3, (HUGE,)), "Storage size calculation overflowed"),
    ("arange", lambda m: m.arange(HUGE), "Storage size calculation overflowed"),
    ("new_empty", lambda m: m.zeros(1).new_empty((HUGE,)), "Storage size calculation overflowed"),
    ("new_zeros", lambda m: m.zeros(1).new_zeros((HUGE,)), "Storage size calculation overflowed"),
    ("float64", lambda m: m.empty(2**61, dtype=m.float64), "Storage size calculation overflowed"),
    ("expand", lambda m: m.zeros(1, 1).expand(2**32, 2**32), "numel: integer multiplication"),
    ("expand-zero", lambda m: m.zeros(0).expand(HUGE, HUGE, 0), "numel: integer multiplication"),
    ("view", lambda m: m.zeros(0).view(HUGE, HUGE, 0), "numel: integer multiplication overflow"),
    ("reshape", lambda m: m.zeros(0).reshape(HUGE, HUGE, 0), "numel: integer multiplication"),
    ("unflatten", lambda m: m.zeros(0).unflatten(0, (HUGE, HUGE, 0)), "numel: integer"),
]


@pytest.mark.parametrize("make, phrase", [c[1:] for c in OVERFLOWS], ids=[c[0] for c in OVERFLOWS])
def test_overflowing_sizes_raise_torchs_error(make, phrase):
    ours, theirs = _both(make)
    assert isinstance(theirs, RuntimeError)  # the oracle: torch refuses these too
    assert isinstance(ours, RuntimeError), repr(ours)
    assert phrase in str(ours)


@pytest.mark.parametrize(
    "make, op",
    [
        (lambda m: m.empty(HUGE), "empty"),
        (lambda m: m.zeros(HUGE), "zeros"),
        (lambda m: m.randn(HUGE), "randn"),
        (lambda m: m.zeros(1, 1).expand(2**32, 2**32), "expand"),
        (lambda m: m.zeros(4).as_strided((2**40, 2**40), (0, 0)), "as_strided"),
    ],
)
def test_size_errors_name_the_op_and_the_sizes(make, op):
    with pytest.raises(RuntimeError) as info:
        make(ember)
    assert str(info.value).startswith(f"{op}():")
    assert "[" in str(info.value) and "]" in str(info.value)  # the sizes are shown


def test_broadcast_result_too_large_for_a_storage():
    """No factory sees this shape: the allocation itself refuses (no OverflowError from cffi)."""
    a = ember.zeros(1).expand(2**40).view(2**40, 1)
    b = ember.zeros(1).expand(2**40).view(1, 2**40)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        a + b


NEGATIVE = [
    ("empty", lambda m: m.empty(-1)),
    ("zeros-second", lambda m: m.empty(2, -1, -2)),
    ("full", lambda m: m.full((-3, 2), 1.0)),
    ("randn", lambda m: m.randn(-1)),
    ("new_empty", lambda m: m.zeros(2).new_empty((-1,))),
]


@pytest.mark.parametrize("make", [c[1] for c in NEGATIVE], ids=[c[0] for c in NEGATIVE])
def test_negative_sizes_use_torchs_message(make):
    ours, theirs = _both(make)
    assert isinstance(theirs, RuntimeError)
    assert isinstance(ours, RuntimeError)
    # torch: "Trying to create tensor with negative dimension -1: [2, -1, -2]" (the first one)
    assert str(theirs).split(": [")[0].split("negative dimension")[1] in str(ours)
    assert "Trying to create tensor with negative dimension" in str(ours)


def test_view_with_an_invalid_size_uses_torchs_message():
    ours, theirs = _both(lambda m: m.zeros(2).reshape(-2, -1))
    assert str(theirs) in str(ours)  # "invalid shape dimension -2 at index 0 of shape [-2, -1]"


DEEP = [
    ("zeros", lambda: ember.zeros(*[1] * 65)),
    ("empty", lambda: ember.empty([1] * 65)),
    ("randn", lambda: ember.randn(*[1] * 65)),
    ("full", lambda: ember.full([1] * 65, 2.0)),
    ("view", lambda: ember.zeros(1).view(*[1] * 65)),
    ("reshape", lambda: ember.zeros(1).reshape([1] * 65)),
    ("expand", lambda: ember.zeros(1).expand(*[1] * 65)),
    ("unsqueeze", lambda: ember.zeros(*[1] * 64).unsqueeze(0)),
    ("unfold", lambda: ember.zeros(*[1] * 64).unfold(0, 1, 1)),
    ("as_strided", lambda: ember.zeros(1).as_strided([1] * 65, [1] * 65)),
    ("getitem", lambda: ember.zeros(*[1] * 64)[None]),
    ("tensor", lambda: ember.tensor(_nested(65))),
]


def _nested(depth: int):
    data = 1.0
    for _ in range(depth):
        data = [data]
    return data


@pytest.mark.parametrize("make", [c[1] for c in DEEP], ids=[c[0] for c in DEEP])
def test_more_than_64_dims_is_refused_at_creation(make):
    """numpy (ember's CPU storage) holds at most 64 dims; refuse clearly instead of failing later
    inside numpy (repr, numpy(), reductions)."""
    with pytest.raises(RuntimeError, match="ember supports at most 64 dims, got 65"):
        make()


def test_64_dims_work():
    x = ember.zeros(*[1] * 64)
    assert (x + 1).sum().item() == 1.0
    assert x.numpy().ndim == 64


def test_zeros_error_names_zeros():
    with pytest.raises(RuntimeError, match=r"^zeros\(\): ember supports at most 64 dims"):
        ember.zeros(*[1] * 65)


# ---- values a dtype cannot hold ------------------------------------------------------------
VALUES = [
    ("full-int8", lambda m: m.full((2,), 300, dtype=m.int8)),
    ("full-int8-low", lambda m: m.full((2,), -129, dtype=m.int8)),
    ("full-uint8", lambda m: m.full((2,), 256, dtype=m.uint8)),
    ("full-int8-fraction", lambda m: m.full((2,), 300.5, dtype=m.int8)),
    ("full-float32", lambda m: m.full((2,), 1e300, dtype=m.float32)),
    ("full-float16", lambda m: m.full((2,), 1e5, dtype=m.float16)),
    ("full-nan-int", lambda m: m.full((2,), float("nan"), dtype=m.int32)),
    ("full-int64", lambda m: m.full((2,), 2**63, dtype=m.int64)),
    ("fill_", lambda m: m.zeros(2, dtype=m.int8).fill_(300)),
    ("fill_-float", lambda m: m.zeros(2).fill_(1e300)),
    ("tensor", lambda m: m.tensor(300, dtype=m.int8)),
    ("tensor-list", lambda m: m.tensor([300, 1], dtype=m.int8)),
    ("full_like", lambda m: m.full_like(m.zeros(2, dtype=m.int8), 300)),
    ("new_full", lambda m: m.zeros(2, dtype=m.int8).new_full((2,), 300)),
    ("setitem", lambda m: m.zeros(2, dtype=m.int8).__setitem__(0, 300)),
]


@pytest.mark.parametrize("make", [c[1] for c in VALUES], ids=[c[0] for c in VALUES])
def test_values_out_of_range_raise_like_torch(make):
    ours, theirs = _both(make)
    assert isinstance(theirs, RuntimeError)
    assert isinstance(ours, RuntimeError), repr(ours)
    assert "value cannot be converted to type" in str(ours)
    assert "without overflow" in str(ours)


ACCEPTED = [
    ("uint8-negative-wraps", lambda m: m.full((2,), -1, dtype=m.uint8)),
    ("uint8-max", lambda m: m.full((2,), 255, dtype=m.uint8)),
    ("int-from-float", lambda m: m.full((2,), 2.5, dtype=m.int64)),
    ("inf-half", lambda m: m.full((2,), float("inf"), dtype=m.float16)),
    ("nan-float", lambda m: m.full((2,), float("nan"), dtype=m.float32)),
    ("bool", lambda m: m.full((2,), 2, dtype=m.bool)),
    ("tensor-value-wraps", lambda m: m.zeros(2, dtype=m.int16).fill_(m.tensor(40000))),
    ("numpy-wraps", lambda m: m.tensor(__import__("numpy").array([300]), dtype=m.int8)),
    ("tensor-float-inf", lambda m: m.tensor([1e300], dtype=m.float32)),
]


@pytest.mark.parametrize("make", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_values_torch_accepts_give_torchs_result(make):
    assert str(make(ember).tolist()) == str(make(torch).tolist())  # str: nan == nan


# ---- steps, strides and dims ---------------------------------------------------------------
STEPS = [
    ("slice-zero", lambda m: m.zeros(4)[::0], ValueError),
    ("slice-negative", lambda m: m.zeros(4)[::-1], ValueError),
    ("unfold-zero-step", lambda m: m.zeros(4).unfold(0, 2, 0), RuntimeError),
    ("unfold-negative-step", lambda m: m.zeros(4).unfold(0, 2, -1), RuntimeError),
    ("unfold-negative-size", lambda m: m.zeros(4).unfold(0, -1, 1), RuntimeError),
    ("as_strided-negative", lambda m: m.zeros(4).as_strided((2,), (-1,), 2), RuntimeError),
    ("as_strided-offset", lambda m: m.zeros(2).as_strided((2,), (1,), -1), RuntimeError),
    ("movedim-repeated-src", lambda m: m.zeros(2, 3, 4).movedim((0, 0), (1, 2)), RuntimeError),
    ("movedim-repeated-dst", lambda m: m.zeros(2, 3, 4).movedim((0, 1), (1, 1)), RuntimeError),
    ("movedim-lengths", lambda m: m.zeros(2, 3, 4).movedim((0, 1), (1,)), RuntimeError),
    ("movedim-range", lambda m: m.zeros(2, 3, 4).movedim(5, 0), IndexError),
    ("permute-repeated", lambda m: m.zeros(2, 3).permute(0, 0), RuntimeError),
    ("permute-range", lambda m: m.zeros(2, 3).permute(0, 2), IndexError),
    ("transpose-range", lambda m: m.zeros(2, 3).transpose(0, 2), IndexError),
    ("max_pool-stride", lambda m: m.nn.functional.max_pool2d(m.zeros(1, 1, 4, 4), 2, 0), None),
    ("avg_pool-stride", lambda m: m.nn.functional.avg_pool2d(m.zeros(1, 1, 4, 4), 2, 0), None),
    (
        "conv-stride",
        lambda m: m.nn.functional.conv2d(m.zeros(1, 1, 4, 4), m.zeros(1, 1, 2, 2), stride=0),
        None,
    ),
    (
        "conv1d-stride",
        lambda m: m.nn.functional.conv1d(m.zeros(1, 1, 4), m.zeros(1, 1, 2), stride=0),
        None,
    ),
    ("unfold-stride", lambda m: m.nn.functional.unfold(m.zeros(1, 1, 4, 4), 2, stride=0), None),
    (
        "conv-dilation",
        lambda m: m.nn.functional.conv2d(m.zeros(1, 1, 4, 4), m.zeros(1, 1, 2, 2), dilation=0),
        None,
    ),
]


@pytest.mark.parametrize("make, error", [c[1:] for c in STEPS], ids=[c[0] for c in STEPS])
def test_bad_steps_strides_and_dims_raise_torchs_error_type_and_words(make, error):
    ours, theirs = _both(make)
    error = error or RuntimeError
    assert isinstance(theirs, error), repr(theirs)
    assert type(ours) is type(theirs) or isinstance(ours, error), repr(ours)
    assert not isinstance(ours, (ZeroDivisionError, StopIteration))
    # torch's message (minus its own prefixes) is in ours, except where torch's wording differs
    # per op (pooling vs convolution): there ours says "non-positive ... is not supported".
    key = str(theirs).split("\n")[0]
    assert key in str(ours) or "is not supported" in str(ours), (str(ours), key)


def test_as_strided_may_restate_a_negative_stride_geometry():
    """ember keeps numpy's negative strides (``from_numpy`` of a reversed array); ``x[...]``
    restates that geometry through as_strided and must keep working."""
    import numpy as np

    x = ember.from_numpy(np.arange(4.0)[::-1])
    assert x[...].tolist() == [3.0, 2.0, 1.0, 0.0]
