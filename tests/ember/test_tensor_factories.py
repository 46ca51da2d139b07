"""Factories: values, dtype inference and sharing, against fixed expectations and, where
installed, PyTorch (the same expression runs on both: ember's API is PyTorch's)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

# (id, factory expression over a module m, expected values, expected dtype name)
CASES = [
    ("tensor-float", lambda m: m.tensor([1.0, 2]), [1.0, 2.0], "float32"),
    ("tensor-int", lambda m: m.tensor([1, 2]), [1, 2], "int64"),
    ("tensor-bool", lambda m: m.tensor([True, False]), [True, False], "bool"),
    ("tensor-bool-int", lambda m: m.tensor([True, 2]), [1, 2], "int64"),
    ("tensor-float-scalar", lambda m: m.tensor(3.5), 3.5, "float32"),
    ("tensor-int-scalar", lambda m: m.tensor(3), 3, "int64"),
    ("tensor-nested-tuple", lambda m: m.tensor(((1, 2), (3, 4))), [[1, 2], [3, 4]], "int64"),
    ("tensor-empty", lambda m: m.tensor([]), [], "float32"),
    ("tensor-empty-2d", lambda m: m.tensor([[], []]), [[], []], "float32"),
    ("tensor-np-f64", lambda m: m.tensor(np.array([1.0, 2.0])), [1.0, 2.0], "float64"),
    ("tensor-np-i32", lambda m: m.tensor(np.array([1], np.int32)), [1], "int32"),
    ("tensor-np-f64-scalar", lambda m: m.tensor(np.float64(2.5)), 2.5, "float64"),
    ("tensor-np-i16-scalar", lambda m: m.tensor(np.int16(2)), 2, "int16"),
    ("tensor-dtype", lambda m: m.tensor([1, 2], dtype=m.float16), [1.0, 2.0], "float16"),
    ("tensor-truncates", lambda m: m.tensor([1.7, -2.7], dtype=m.int32), [1, -2], "int32"),
    ("tensor-big-int", lambda m: m.tensor([2**40]), [2**40], "int64"),
    (
        "tensor-0d-tensors",
        lambda m: m.tensor([m.tensor(1.0), m.tensor(2.0)]),
        [1.0, 2.0],
        "float32",
    ),
    ("zeros-varargs", lambda m: m.zeros(2, 3), [[0.0] * 3] * 2, "float32"),
    ("zeros-tuple", lambda m: m.zeros((1, 2)), [[0.0, 0.0]], "float32"),
    ("zeros-list", lambda m: m.zeros([2]), [0.0, 0.0], "float32"),
    ("zeros-0d", lambda m: m.zeros(()), 0.0, "float32"),
    ("zeros-size", lambda m: m.zeros(m.Size([2, 1])), [[0.0], [0.0]], "float32"),
    ("zeros-int", lambda m: m.zeros(2, dtype=m.int64), [0, 0], "int64"),
    ("ones", lambda m: m.ones(2, 1), [[1.0], [1.0]], "float32"),
    ("ones-bool", lambda m: m.ones(2, dtype=m.bool), [True, True], "bool"),
    ("full-float", lambda m: m.full((2,), 1.5), [1.5, 1.5], "float32"),
    ("full-int", lambda m: m.full((2,), 7), [7, 7], "int64"),
    ("full-bool", lambda m: m.full((2,), True), [True, True], "bool"),
    ("full-dtype", lambda m: m.full([2], 7, dtype=m.float64), [7.0, 7.0], "float64"),
    ("arange", lambda m: m.arange(5), [0, 1, 2, 3, 4], "int64"),
    ("arange-start", lambda m: m.arange(1, 4), [1, 2, 3], "int64"),
    ("arange-float-step", lambda m: m.arange(0, 1, 0.25), [0.0, 0.25, 0.5, 0.75], "float32"),
    ("arange-negative", lambda m: m.arange(5, 0, -2), [5, 3, 1], "int64"),
    ("arange-float-end", lambda m: m.arange(4.0), [0.0, 1.0, 2.0, 3.0], "float32"),
    ("arange-dtype", lambda m: m.arange(3, dtype=m.float64), [0.0, 1.0, 2.0], "float64"),
    ("arange-empty", lambda m: m.arange(0), [], "int64"),
    ("arange-int-float-step", lambda m: m.arange(0, 5, 1.5), [0.0, 1.5, 3.0, 4.5], "float32"),
    ("linspace", lambda m: m.linspace(0, 1, 5), [0.0, 0.25, 0.5, 0.75, 1.0], "float32"),
    ("linspace-one", lambda m: m.linspace(2, 3, 1), [2.0], "float32"),
    ("linspace-none", lambda m: m.linspace(0, 1, 0), [], "float32"),
    ("linspace-int", lambda m: m.linspace(0, 10, 5, dtype=m.int64), [0, 2, 5, 7, 10], "int64"),
    ("linspace-down", lambda m: m.linspace(1, -1, 3), [1.0, 0.0, -1.0], "float32"),
    ("eye", lambda m: m.eye(2), [[1.0, 0.0], [0.0, 1.0]], "float32"),
    ("eye-rect", lambda m: m.eye(2, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "float32"),
    ("eye-int", lambda m: m.eye(2, dtype=m.int32), [[1, 0], [0, 1]], "int32"),
    ("eye-empty", lambda m: m.eye(0), [], "float32"),
    ("zeros-like", lambda m: m.zeros_like(m.ones(2, dtype=m.int32)), [0, 0], "int32"),
    ("ones-like-dtype", lambda m: m.ones_like(m.zeros(2), dtype=m.float64), [1.0, 1.0], "float64"),
    ("full-like", lambda m: m.full_like(m.zeros(2, dtype=m.int64), 3), [3, 3], "int64"),
    ("full-like-truncates", lambda m: m.full_like(m.zeros(1, dtype=m.int64), 3.7), [3], "int64"),
    ("as-tensor", lambda m: m.as_tensor([1, 2]), [1, 2], "int64"),
    ("as-tensor-dtype", lambda m: m.as_tensor([1, 2], dtype=m.float32), [1.0, 2.0], "float32"),
    ("new-zeros", lambda m: m.ones(2, dtype=m.int16).new_zeros(3), [0, 0, 0], "int16"),
    ("new-ones", lambda m: m.ones(1, dtype=m.int16).new_ones((1, 2)), [[1, 1]], "int16"),
    ("new-full", lambda m: m.ones(2).new_full((2,), 4), [4.0, 4.0], "float32"),
    ("new-tensor", lambda m: m.ones(2, dtype=m.float64).new_tensor([1, 2]), [1.0, 2.0], "float64"),
]


@pytest.mark.parametrize("make, values, dtype", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_factory_values_and_dtype(make, values, dtype):
    t = make(ember)
    assert t.dtype is getattr(ember, dtype)
    assert t.tolist() == values


@pytest.mark.parametrize("make", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_factory_matches_torch(make):
    torch = pytest.importorskip("torch")
    ours, theirs = make(ember), make(torch)
    assert str(ours.dtype).replace("ember", "torch") == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize(
    "make, shape",
    [
        (lambda: ember.empty(2, 3), (2, 3)),
        (lambda: ember.empty((4,)), (4,)),
        (lambda: ember.empty(0), (0,)),
        (lambda: ember.empty_like(ember.zeros(2, 2, dtype=ember.int8)), (2, 2)),
        (lambda: ember.ones(2).new_empty(3), (3,)),
    ],
)
def test_empty_shapes(make, shape):
    t = make()
    assert tuple(t.shape) == shape and t.is_contiguous()


def test_requires_grad_and_device_keywords():
    for make in (ember.zeros, ember.ones, ember.empty):
        t = make(2, requires_grad=True, device="cpu")
        assert t.requires_grad and t.is_leaf and t.device == "cpu"
    assert ember.full((2,), 1.0, requires_grad=True).requires_grad
    assert ember.arange(3.0, requires_grad=True).requires_grad
    assert ember.tensor([1.0], requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require"):
        ember.tensor([1], requires_grad=True)


def test_tensor_copies_its_data():
    array = np.arange(3.0)
    t = ember.tensor(array)
    array[0] = 9
    assert t.tolist() == [0.0, 1.0, 2.0]
    source = ember.ones(2)
    copy = ember.tensor(source)
    source.fill_(5)
    assert copy.tolist() == [1.0, 1.0]


def test_from_numpy_shares_memory_both_ways():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(array)
    assert t.dtype is ember.float32 and t.shape == (2, 3) and t.stride() == (3, 1)
    array[0, 0] = 42
    assert t[0, 0].item() == 42
    t[1, 2] = -1
    assert array[1, 2] == -1
    assert t.data_ptr() == array.ctypes.data


def test_from_numpy_keeps_negative_and_odd_strides():
    array = np.arange(12, dtype=np.int64).reshape(3, 4)
    flipped = ember.from_numpy(array[::-1, ::2])
    assert flipped.stride() == (-4, 2)
    assert flipped.tolist() == array[::-1, ::2].tolist()
    assert not flipped.is_contiguous()
    assert (flipped + 0).tolist() == array[::-1, ::2].tolist()  # kernels read it right
    flipped[0, 0] = 100  # and writes land in the array
    assert array[2, 0] == 100
    assert np.shares_memory(flipped.numpy(), array)


def test_from_numpy_views_and_scalars():
    array = np.arange(10.0)
    assert ember.from_numpy(array[3:7]).tolist() == [3.0, 4.0, 5.0, 6.0]
    zero_d = ember.from_numpy(np.array(5, dtype=np.int16))
    assert zero_d.shape == () and zero_d.item() == 5 and zero_d.dtype is ember.int16
    empty = ember.from_numpy(np.zeros((0, 3)))
    assert empty.shape == (0, 3) and empty.tolist() == []
    broadcast = ember.from_numpy(np.broadcast_to(np.arange(3), (2, 3)))
    assert broadcast.stride() == (0, 1) and broadcast.tolist() == [[0, 1, 2]] * 2


@pytest.mark.parametrize(
    "bad, error, message",
    [
        ([1, 2], TypeError, r"from_numpy\(\): expected np.ndarray \(got list\)"),
        (np.array(["a"]), TypeError, "numpy dtype <U1 is not supported"),
        (np.array([1 + 2j], dtype=np.complex256), TypeError, "numpy dtype complex256 is not"),
        (np.array([1.0], dtype=">f8"), ValueError, "non-native byte order"),
    ],
    ids=["list", "str", "complex", "big-endian"],
)
def test_from_numpy_errors(bad, error, message):
    with pytest.raises(error, match=message):
        ember.from_numpy(bad)


def test_as_tensor_shares_when_it_can():
    array = np.arange(3.0)
    t = ember.as_tensor(array)
    array[0] = 7
    assert t[0].item() == 7
    same = ember.ones(2)
    assert ember.as_tensor(same) is same
    assert ember.as_tensor(same, dtype=ember.float32) is same
    converted = ember.as_tensor(same, dtype=ember.float64)
    assert converted.dtype is ember.float64 and converted is not same
    copied = ember.as_tensor(array, dtype=ember.float32)  # another dtype: a copy
    array[1] = 9
    assert copied.tolist() == [7.0, 1.0, 2.0]


def test_dtype_arguments_accept_names_and_numpy_dtypes():
    assert ember.zeros(1, dtype="float64").dtype is ember.float64
    assert ember.zeros(1, dtype=np.int8).dtype is ember.int8
    assert ember.tensor([1], dtype=np.dtype("uint8")).dtype is ember.uint8
    with pytest.raises(TypeError, match=r"dtype must be an ember\.dtype, got 'complex256'"):
        ember.zeros(1, dtype="complex256")


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: ember.zeros(-1), RuntimeError, r"negative dimension -1: \[-1\]"),
        (lambda: ember.zeros(2, "3"), TypeError, "size must be a sequence of ints"),
        (lambda: ember.zeros(2.5), TypeError, "size must be a sequence of ints"),
        (lambda: ember.full((2,), "x"), TypeError, "expected a Tensor or a Python number"),
        (lambda: ember.arange(0, 5, 0), RuntimeError, "step must be nonzero"),
        (lambda: ember.arange(5, 0, 1), RuntimeError, "inconsistent with step sign"),
        (lambda: ember.linspace(0, 1, -1), RuntimeError, "number of steps must be non-negative"),
        (lambda: ember.tensor("abc"), TypeError, "strings are not supported"),
        (lambda: ember.tensor([[1, 2], [3]]), ValueError, "inhomogeneous shape"),
        (lambda: ember.tensor({1: 2}), TypeError, "can't infer a dtype for dict"),
    ],
    ids=[
        "negative-size",
        "str-size",
        "float-size",
        "str-fill",
        "zero-step",
        "wrong-sign",
        "negative-steps",
        "string",
        "ragged",
        "dict",
    ],
)
def test_factory_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_is_tensor():
    assert ember.is_tensor(ember.ones(1))
    assert not ember.is_tensor(np.ones(1))


# Python ints at and beyond the edges of int64 and of the unsigned dtypes: PyTorch reads each
# into the dtype (uint64 unsigned, floats exactly, the rest through int64), never wrapping.
BIG_INTS = [
    ([1, 2**63 + 5], None),
    ([2**64], None),
    ((1, 2**63), None),
    ([1.5, 2**63 + 5], None),
    ([1, 2**63 + 5], "uint64"),
    ([[1, 2], [3, 2**64 - 1]], "uint64"),
    ([2**64], "uint64"),
    ([-1], "uint64"),
    ([-1, 2**63], "uint64"),
    ([2**63 + 5], "int64"),
    ([2**63 + 1], "uint8"),
    ([1, 2**64], "float32"),
    ([1, 2**64], "complex64"),
    ([2**40], "uint16"),
    ([2**40], "uint32"),
    ([-(2**40)], "uint32"),
    ([-1], "uint32"),
    ([300], "uint8"),
]


@pytest.mark.parametrize("data,dtype", BIG_INTS, ids=[f"{d}-{t}" for d, t in BIG_INTS])
def test_big_python_ints_are_read_as_torch_reads_them(data, dtype):
    torch = pytest.importorskip("torch")

    def build(lib):
        try:
            return lib.tensor(data, dtype=getattr(lib, dtype) if dtype else None)
        except (RuntimeError, ValueError, OverflowError) as exc:
            return exc

    theirs, ours = build(torch), build(ember)
    if isinstance(theirs, Exception):
        assert type(ours) is type(theirs), ours
        assert str(theirs) in str(ours)
    else:
        assert not isinstance(ours, Exception), ours
        assert str(ours.dtype) == str(theirs.dtype).replace("torch", "ember")
        assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("value", [-1, -5, 2**16 - 1, 2**40, 2**64 - 1])
def test_wide_unsigned_fills_wrap_or_refuse_as_torch(dtype, value):
    """full/fill_ of the limited unsigned dtypes: a negative value wraps (c10's cast), one past
    the dtype's range is refused."""
    torch = pytest.importorskip("torch")

    def build(lib):
        try:
            return lib.full((2,), value, dtype=getattr(lib, dtype)).tolist()
        except RuntimeError as exc:
            return type(exc)

    assert build(ember) == build(torch)
