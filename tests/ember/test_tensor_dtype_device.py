"""Dtypes and devices: the objects, their names and errors, and the defaults."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember

DTYPES = [
    # name, itemsize, floating, signed, numpy
    ("bool", 1, False, False, np.bool_),
    ("uint8", 1, False, False, np.uint8),
    ("int8", 1, False, True, np.int8),
    ("int16", 2, False, True, np.int16),
    ("int32", 4, False, True, np.int32),
    ("int64", 8, False, True, np.int64),
    ("float16", 2, True, True, np.float16),
    ("bfloat16", 2, True, True, None),
    ("float32", 4, True, True, np.float32),
    ("float64", 8, True, True, np.float64),
]


@pytest.fixture
def default_dtype():
    before = ember.get_default_dtype()
    yield
    ember.set_default_dtype(before)


@pytest.mark.parametrize("name, itemsize, floating, signed, np_type", DTYPES)
def test_dtype_facts(name, itemsize, floating, signed, np_type):
    d = getattr(ember, name)
    assert d.itemsize == itemsize
    assert d.is_floating_point is floating
    assert d.is_signed is signed
    assert d.is_complex is False
    assert repr(d) == str(d) == f"ember.{name}"
    assert pickle.loads(pickle.dumps(d)) is d
    t = ember.zeros(2, dtype=d)
    assert t.dtype is d and t.element_size() == t.itemsize == itemsize
    assert t.is_floating_point() is floating
    if np_type is not None:
        assert t.numpy().dtype == np_type


def test_dtype_codes_are_the_native_numbering():
    assert [getattr(ember, name).code for name, *_ in DTYPES] == list(range(10))


@pytest.mark.parametrize(
    "alias, target",
    [
        ("half", "float16"),
        ("float", "float32"),
        ("double", "float64"),
        ("short", "int16"),
        ("int", "int32"),
        ("long", "int64"),
    ],
)
def test_dtype_aliases(alias, target):
    assert getattr(ember, alias) is getattr(ember, target)


def test_default_dtype(default_dtype):
    assert ember.get_default_dtype() is ember.float32
    assert ember.tensor([1.5]).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    assert ember.get_default_dtype() is ember.float64
    assert ember.tensor([1.5]).dtype is ember.float64
    assert ember.zeros(2).dtype is ember.float64
    assert ember.arange(0.0, 1.0, 0.5).dtype is ember.float64
    assert ember.tensor([1]).dtype is ember.int64  # integers are not affected
    assert (ember.tensor([1]) * 0.5).dtype is ember.float64  # Python floats promote to it


@pytest.mark.parametrize("bad", [ember.int32, ember.bool, "float32", np.float32])
def test_set_default_dtype_refuses_non_floating(default_dtype, bad):
    with pytest.raises(TypeError, match="only floating-point dtypes"):
        ember.set_default_dtype(bad)
    assert ember.get_default_dtype() is ember.float32


# ---- devices -----------------------------------------------------------------------------
def test_device_from_string_and_parts():
    d = ember.device("cuda:1")
    assert (d.type, d.index) == ("cuda", 1)
    assert d is ember.device("cuda", 1)  # interned
    assert ember.device(d) is d
    x = ember.device("xpu", 0)
    assert repr(x) == "device(type='xpu', index=0)" and str(x) == "xpu:0"
    cpu = ember.device("cpu")
    assert (cpu.type, cpu.index) == ("cpu", None)
    assert repr(cpu) == "device(type='cpu')" and str(cpu) == "cpu"


def test_device_equality_and_hash():
    d = ember.device("cuda", 1)
    assert d == "cuda:1" and d == "cuda:1"
    assert d != "cuda:0" and d != "cuda" and d != ember.device("cuda")
    assert d != 1 and d is not None
    assert d != "not a device!"  # an invalid string is just unequal
    assert {d: "found"}["cuda:1"] == "found"  # equal to its string, so hashed like it
    assert hash(ember.device("cpu")) == hash("cpu")
    assert len({ember.device("cuda:1"), ember.device("cuda", 1)}) == 1


def test_device_pickles_to_the_same_object():
    d = ember.device("xpu", 3)
    assert pickle.loads(pickle.dumps(d)) is d


def test_device_index_accepts_integers_like_numpy_ones():
    assert ember.device("cuda", np.int64(2)) == "cuda:2"


@pytest.mark.parametrize(
    "args, error, message",
    [
        (("cuda:-1",), RuntimeError, "Invalid device string: 'cuda:-1'"),
        (("cu da",), RuntimeError, "Invalid device string"),
        (("",), RuntimeError, "Invalid device string"),
        (("cuda:1:2",), RuntimeError, "Invalid device string"),
        ((":0",), RuntimeError, "Invalid device string"),
        (("cuda", -1), RuntimeError, "Device index must not be negative"),
        (("cuda:0", 1), RuntimeError, "index given in 'cuda:0' and as 1"),
        (("cuda", "1"), TypeError, "argument 'index' must be int, not str"),
        (("cuda", 1.0), TypeError, "argument 'index' must be int, not float"),
        ((1,), TypeError, "expected a string or device, got int"),
        ((None,), TypeError, "expected a string or device, got NoneType"),
    ],
)
def test_device_errors(args, error, message):
    with pytest.raises(error, match=message):
        ember.device(*args)


def test_index_given_twice_for_a_device_object():
    with pytest.raises(ValueError, match="index was given twice"):
        ember.device(ember.device("cuda", 0), 1)


def test_tensor_device_facts():
    t = ember.ones(2)
    assert t.device == "cpu" and t.device is ember.device("cpu")
    assert t.is_cpu and not t.is_cuda
    assert t.get_device() == -1
    assert ember.ones(2, device="cpu").device is t.device
    assert ember.ones(2, device=ember.device("cpu")).device is t.device


def test_default_device_context():
    cpu = ember.device("cpu")
    assert ember.get_default_device() is cpu
    with cpu:
        assert ember.zeros(1).device is cpu
    ember.set_default_device("cpu")
    ember.set_default_device(None)
    assert ember.get_default_device() is cpu


def test_device_index_without_type_is_refused():
    with pytest.raises(TypeError, match=r"device index 0 given without a type"):
        ember.zeros(1, device=0)


def test_unknown_device_type_names_the_available_ones():
    with pytest.raises(RuntimeError, match=r"no backend plugin provides device type 'tpu'"):
        ember.zeros(1, device="tpu")
