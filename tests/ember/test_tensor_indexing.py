"""``__getitem__``/``__setitem__`` with numpy's rules (PyTorch's too, for these cases).

Basic indices give views; advanced ones copy on read and write into the original on assignment.
Advanced indexing runs on the reduction, nonzero, index_select and put_ kernels.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _pair():
    return ember.arange(24).view(2, 3, 4), np.arange(24).reshape(2, 3, 4)


BASIC = {
    "int": 1,
    "negative-int": -1,
    "ints": (1, 2),
    "all-ints": (1, 2, 3),
    "slice": slice(1, None),
    "steps": (slice(None), slice(None, None, 2), slice(1, None, 3)),
    "stop-beyond": (slice(None), slice(-10, 10)),
    "empty-slice": (slice(None), slice(2, 1)),
    "none": None,
    "nones": (None, 0, None, slice(None), None),
    "ellipsis": Ellipsis,
    "ellipsis-int": (Ellipsis, 1),
    "int-ellipsis-none": (0, Ellipsis, None),
    "true": True,
    "false": False,
    "int-true": (0, True),
    "numpy-int": np.int64(1),
    "int-slice-int": (1, slice(0, 2), -1),
}

ADVANCED = {
    "list": [1, 0],
    "list-dim1": (slice(None), [0, 2]),
    "negative-list": (slice(None), [-1, 0, -3]),
    "repeated": [0, 0, 1],
    "two-lists": ([0, 1], [1, 2]),
    "broadcast-lists": ([[0], [1]], [0, 2]),
    "lists-apart": ([0, 1], slice(None), [0, 3]),
    "int-and-list": (1, [2, 0]),
    "slice-then-list": (slice(None), slice(1, None), [3, 0]),
    "ndarray": np.array([1, 0]),
    "tensor": "tensor",
    "mask": "mask",
    "mask-2d": "mask-2d",
    "row-mask": (slice(None), [True, False, True]),
    "empty-list": [],
}


@pytest.mark.parametrize("index", list(BASIC.values()), ids=list(BASIC))
def test_basic_indexing_gives_views(index):
    x, a = _pair()
    got, expected = x[index], a[index]
    assert tuple(got.shape) == expected.shape
    assert got.tolist() == expected.tolist()
    assert got.untyped_storage() is x.untyped_storage()
    if got.numel():
        got.fill_(-1)  # lands where the view points; the base's values are their own positions
        a.reshape(-1)[np.asarray(expected).reshape(-1)] = -1
        assert x.tolist() == a.tolist()


def test_full_index_is_a_new_view():
    x = ember.arange(3)
    for index in (Ellipsis, slice(None)):
        view = x[index]
        assert view is not x and view.untyped_storage() is x.untyped_storage()


@pytest.mark.parametrize("index", list(ADVANCED.values()), ids=list(ADVANCED))
def test_advanced_indexing_reads_a_copy(index):
    x, a = _pair()
    if isinstance(index, str):  # indices built from the tensor itself
        if index == "mask-2d":
            x, a = x[0], a[0]
        index_x = ember.tensor([1, 0]) if index == "tensor" else x > 5
        index_a = np.array([1, 0]) if index == "tensor" else a > 5
    else:
        index_x = index_a = index
    got, expected = x[index_x], a[index_a]
    assert tuple(got.shape) == expected.shape
    assert got.tolist() == expected.tolist()
    if got.numel():
        assert got.untyped_storage() is not x.untyped_storage()


@pytest.mark.parametrize(
    "index, value",
    [
        (1, 0),
        ((slice(None), 1), [7, 8, 9, 10]),  # broadcast over the first dim
        (slice(0, 1), ember.arange(4)),
        (Ellipsis, 5),
        ((0, slice(None), None), ember.tensor([[1, 2, 3, 4]])),
        ((slice(None), 0, slice(1, None, 2)), 0),
        (0, 2.7),  # cast to the target's dtype
        (None, ember.zeros(1, 2, 3, 4)),
    ],
    ids=["int", "broadcast", "tensor", "ellipsis", "none", "steps", "float", "leading-one"],
)
def test_basic_assignment(index, value):
    x, a = _pair()
    x[index] = value
    a[index] = np.asarray(value.tolist() if isinstance(value, ember.Tensor) else value)
    assert x.tolist() == a.tolist()


@pytest.mark.parametrize(
    "index, value",
    [
        ([0, 1], -1),
        ((slice(None), [0, 2]), ember.tensor([[5], [6]]).view(2, 1, 1)),
        (([0, 1], [1, 2]), [[50], [60]]),
        (([0, 1], slice(None), [0, 3]), ember.arange(3)),
        ("mask", 0),
        ((1, [2, 0]), ember.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])),
    ],
    ids=["list", "broadcast-value", "two-lists", "lists-apart", "mask", "int-and-list"],
)
def test_advanced_assignment_writes_in_place(index, value):
    x, a = _pair()
    storage = x.untyped_storage()
    if isinstance(index, str):
        x[x > 5] = value
        a[a > 5] = value
    else:
        x[index] = value
        a[index] = np.asarray(value.tolist() if isinstance(value, ember.Tensor) else value)
    assert x.untyped_storage() is storage
    assert x.tolist() == a.tolist()


def test_assignment_through_a_view_reaches_the_base():
    x, a = _pair()
    view = x[1]
    view[:, 0] = 99
    a[1][:, 0] = 99
    assert x.tolist() == a.tolist()


@pytest.mark.parametrize(
    "index, error, message",
    [
        (3, IndexError, "index 3 is out of bounds for dimension 0 with size 2"),
        (-3, IndexError, "index -3 is out of bounds for dimension 0 with size 2"),
        ((0, 3), IndexError, "index 3 is out of bounds for dimension 1 with size 3"),
        ((None, 1, None, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 3"),
        ((0, Ellipsis, 4), IndexError, "index 4 is out of bounds for dimension 2 with size 4"),
        ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
        ((Ellipsis, Ellipsis), IndexError, r"an index can only have a single ellipsis \('...'\)"),
        (1.5, IndexError, r"only integers, slices .* are valid indices \(got float\)"),
        ("a", IndexError, r"are valid indices \(got str\)"),
        ({}, IndexError, r"are valid indices \(got dict\)"),
        ([0.5], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
        (slice(None, None, -1), ValueError, "step must be greater than zero"),
        (slice(None, None, 0), ValueError, "slice step cannot be zero"),
        ([0, 2], IndexError, "index 2 is out of bounds for dimension 0 with size 2"),
        ((slice(None), [-4]), IndexError, "index -4 is out of bounds for dimension 1 with size 3"),
        ([True, False, True], IndexError, r"shape of the mask \[3\] at index 0 does not match"),
    ],
)
def test_index_errors(index, error, message):
    x, _ = _pair()
    with pytest.raises(error, match=message):
        x[index]


def test_indexing_a_0d_tensor():
    t = ember.tensor(5)
    assert t[...].item() == 5 and t[None].shape == (1,) and t[()].item() == 5
    with pytest.raises(IndexError, match="0-dim"):
        t[0]


@pytest.mark.parametrize(
    "index, value, error, message",
    [
        (
            0,
            ember.arange(3),
            RuntimeError,
            r"source of shape \[3\] can't be broadcast to .* \[3, 4\]",
        ),
        (5, 1, IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
        (([0, 1], [1, 2]), ember.tensor([50, 60]), RuntimeError, r"Target sizes: \[2, 4\]"),
        (0, "a", TypeError, "strings are not supported"),
    ],
)
def test_assignment_errors(index, value, error, message):
    x, _ = _pair()
    with pytest.raises(error, match=message):
        x[index] = value


def test_iteration_and_len_follow_the_first_dim():
    x, a = _pair()
    rows = list(x)
    assert len(rows) == len(x) == 2
    assert [r.tolist() for r in rows] == a.tolist()
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ember.tensor(1))
