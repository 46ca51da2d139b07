"""Conversions: numpy (zero-copy), Python values, dtype/device changes, DLPack."""

from __future__ import annotations

import gc
import operator
import re

import numpy as np
import pytest

import ember


def test_numpy_is_zero_copy():
    x = ember.arange(6.0).view(2, 3)
    array = x.numpy()
    assert array.dtype == np.float32 and array.shape == (2, 3)
    assert array.ctypes.data == x.data_ptr()
    array[0, 0] = 9
    assert x[0, 0].item() == 9
    x[1, 2] = -1
    assert array[1, 2] == -1


def test_numpy_of_views_keeps_strides_and_offset():
    x = ember.arange(12).view(3, 4)
    t = x.T.numpy()
    assert t.strides == (8, 32) and np.shares_memory(t, x.numpy())
    assert t.tolist() == np.arange(12).reshape(3, 4).T.tolist()
    part = x[1:, ::2].numpy()
    assert part.tolist() == [[4, 6], [8, 10]]
    assert part.ctypes.data == x.data_ptr() + 4 * 8
    assert ember.arange(4).expand(2, 4).numpy().strides == (0, 8)
    flipped = ember.from_numpy(np.arange(5)[::-1])
    assert flipped.numpy().strides == (-8,) and flipped.numpy().tolist() == [4, 3, 2, 1, 0]


@pytest.mark.parametrize("dtype", [d.name for d in ember._dtype.ALL])
def test_numpy_dtypes(dtype):
    t = ember.ones(3, dtype=getattr(ember, dtype))
    assert t.numpy().dtype == getattr(ember, dtype).np
    assert t.numpy().astype(np.float64).tolist() == [1.0, 1.0, 1.0]


def test_numpy_refuses_tensors_that_require_grad():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    assert x.numpy(force=True).tolist() == [1.0, 1.0]


def test_numpy_view_keeps_storage_alive():
    x = ember.arange(1 << 20, dtype=ember.float32)  # 4 MiB: from the caching allocator
    array = x.numpy()
    expected = np.arange(1 << 20, dtype=np.float32)
    del x
    gc.collect()
    others = [ember.full((1 << 20,), -1.0) for _ in range(4)]  # would reuse a freed block
    assert np.array_equal(array, expected)
    small = ember.ones(10)[2:5].numpy()  # small storages are kept alive the same way
    gc.collect()
    assert small.tolist() == [1.0, 1.0, 1.0]
    del others


def test_array_protocol():
    x = ember.arange(3.0)
    assert np.asarray(x).dtype == np.float32
    assert np.asarray(x, dtype=np.int32).tolist() == [0, 1, 2]
    assert np.asarray(ember.ones(2, requires_grad=True)).tolist() == [1.0, 1.0]
    assert np.add(x, 1).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "make, value, kind",
    [
        (lambda: ember.tensor(2.5), 2.5, float),
        (lambda: ember.tensor(2), 2, int),
        (lambda: ember.tensor(True), True, bool),
        (lambda: ember.tensor([7]), 7, int),
        (lambda: ember.tensor([[1.5]], dtype=ember.float16), 1.5, float),
        (lambda: ember.tensor(1.5, dtype=ember.bfloat16), 1.5, float),
        (lambda: ember.tensor(255, dtype=ember.uint8), 255, int),
        (lambda: ember.arange(10)[3:4], 3, int),
    ],
)
def test_item(make, value, kind):
    got = make().item()
    assert got == value and type(got) is kind


def test_item_of_several_elements():
    with pytest.raises(
        RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"
    ):
        ember.ones(2).item()
    with pytest.raises(RuntimeError, match="a Tensor with 0 elements"):
        ember.ones(0).item()


def test_tolist():
    assert ember.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert ember.tensor(3.0).tolist() == 3.0
    assert ember.arange(6).view(2, 3).T.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert ember.tensor([1.5], dtype=ember.bfloat16).tolist() == [1.5]
    assert type(ember.tensor([1.5], dtype=ember.bfloat16).tolist()[0]) is float
    assert ember.zeros(2, 0).tolist() == [[], []]


def test_python_number_protocols():
    assert int(ember.tensor(3.7)) == 3 and float(ember.tensor(2)) == 2.0
    assert bool(ember.tensor(0)) is False and bool(ember.tensor([0.5])) is True
    assert complex(ember.tensor(1.0)) == 1 + 0j
    assert operator.index(ember.tensor(3)) == 3
    assert [10, 20, 30][ember.tensor(1)] == 20
    with pytest.raises(TypeError, match="only integer tensors of a single element"):
        operator.index(ember.tensor(3.0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with 2 elements is ambiguous"):
        bool(ember.ones(2))


def test_to_dtype_device_and_other():
    x = ember.arange(3)
    assert x.to(ember.float32).dtype is ember.float32
    assert x.to("cpu") is x and x.to(ember.int64) is x and x.to(ember.device("cpu")) is x
    assert x.to(ember.int64, copy=True) is not x
    assert x.to(ember.ones(1, dtype=ember.float16)).dtype is ember.float16
    both = x.to("cpu", ember.float64)
    assert both.dtype is ember.float64 and both.tolist() == [0.0, 1.0, 2.0]
    assert x.to(dtype=ember.int8, device="cpu").dtype is ember.int8
    converted = x.to(ember.float32)
    converted.fill_(7)
    assert x.tolist() == [0, 1, 2]  # a new tensor, not a view


def test_to_rounds_like_a_cast():
    x = ember.tensor([-1.7, 0.5, 2.9, 300.0])
    assert x.to(ember.int32).tolist() == [-1, 0, 2, 300]
    assert x.to(ember.bool).tolist() == [True, True, True, True]
    assert ember.tensor([1.0, 0.0]).to(ember.bool).tolist() == [True, False]


@pytest.mark.parametrize(
    "args, kwargs, message",
    [
        ((5,), {}, "to() received an invalid argument 5"),
        ((), {"foo": 1}, r"to() got unexpected keyword arguments \['foo'\]"),
    ],
)
def test_to_errors(args, kwargs, message):
    with pytest.raises(TypeError, match=message.replace("()", r"\(\)")):
        ember.ones(1).to(*args, **kwargs)


def test_to_an_unknown_device():
    with pytest.raises(RuntimeError, match="no backend plugin provides device type 'tpu'"):
        ember.ones(1).to("tpu")


@pytest.mark.parametrize(
    "method, dtype",
    [
        ("float", "float32"),
        ("double", "float64"),
        ("half", "float16"),
        ("bfloat16", "bfloat16"),
        ("long", "int64"),
        ("int", "int32"),
        ("short", "int16"),
        ("char", "int8"),
        ("byte", "uint8"),
        ("bool", "bool"),
    ],
)
def test_cast_methods(method, dtype):
    assert getattr(ember.arange(3), method)().dtype is getattr(ember, dtype)


def test_cpu_type_and_type_as():
    x = ember.arange(3)
    assert x.cpu() is x
    assert x.type_as(ember.ones(1, dtype=ember.float16)).dtype is ember.float16
    assert x.type() == "ember.LongTensor"
    assert ember.ones(1).type() == "ember.FloatTensor"
    assert ember.ones(1, dtype=ember.bool).type() == "ember.BoolTensor"
    assert x.type(ember.float64).dtype is ember.float64


def test_dlpack_round_trip_with_numpy():
    x = ember.arange(6.0).view(2, 3)
    assert x.__dlpack_device__() == (1, 0)
    array = np.from_dlpack(x)
    array[1, 1] = -5
    assert x[1, 1].item() == -5  # shared, not copied
    back = ember.from_dlpack(array)
    assert back.tolist() == x.tolist() and back.data_ptr() == x.data_ptr()
    strided = ember.arange(12).view(3, 4).T
    assert ember.from_dlpack(strided).stride() == (1, 4)
    assert ember.from_dlpack(np.arange(5)[::-2]).tolist() == [4, 2, 0]


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    x = ember.arange(4.0)
    t = torch.from_dlpack(x)
    t[0] = 42
    assert x[0].item() == 42
    back = ember.from_dlpack(torch.arange(3))
    assert back.tolist() == [0, 1, 2] and back.dtype is ember.int64


def test_utils_dlpack_capsules_share_memory_both_ways_with_torch():
    """``ember.utils.dlpack`` (PyTorch's capsule functions): a capsule from either library is
    read by the other, sharing memory and writable, as PyTorch imports legacy capsules."""
    torch = pytest.importorskip("torch")
    x = ember.arange(4.0)
    mine = ember.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(x))
    mine[0] = 7
    theirs = torch.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(x))
    theirs[2] = 9
    assert x.tolist() == [7.0, 1.0, 9.0, 3.0]
    t = torch.arange(3.0)
    imported = ember.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    imported[1] = 5
    assert t.tolist() == [0.0, 5.0, 2.0]
    exported = ember.utils.dlpack.from_dlpack(np.arange(3.0))  # an exporter, not a capsule
    assert exported.dtype is ember.float64 and exported.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"count": 2, "offset": 4}, {"offset": 100}, {"offset": -1}, {"count": 10}, {"count": 0}],
)
def test_frombuffer_matches_torch(kwargs):
    """``frombuffer`` shares the buffer's memory; PyTorch's ValueErrors for bad ranges."""
    import array

    torch = pytest.importorskip("torch")
    mine, theirs = array.array("f", [1, 2, 3, 4]), array.array("f", [1, 2, 3, 4])
    try:
        want = torch.frombuffer(theirs, dtype=torch.float32, **kwargs)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            ember.frombuffer(mine, dtype=ember.float32, **kwargs)
        return
    got = ember.frombuffer(mine, dtype=ember.float32, **kwargs)
    assert got.tolist() == want.tolist()
    got[0] = 9
    assert mine.tolist() == [1.0, 9.0, 3.0, 4.0] if kwargs else mine[0] == 9


def test_frombuffer_refuses_what_is_no_buffer():
    with pytest.raises(ValueError, match="buffer protocol"):
        ember.frombuffer([1, 2], dtype=ember.float32)
    with pytest.raises(ValueError, match="multiple of element size"):
        ember.frombuffer(bytearray(6), dtype=ember.float32)
