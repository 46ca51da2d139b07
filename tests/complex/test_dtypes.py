"""Complex dtype objects and PyTorch's promotion with them (the complex category above float),
Python complex scalars, the default dtype, factories and printing, all against torch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import ember
from ember import _dtype as dt

NAMES = [d.name for d in dt.EVERY]


def test_dtype_objects():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128
    for name in ("complex64", "complex128"):
        d, t = getattr(ember, name), getattr(torch, name)
        assert d.is_complex == t.is_complex and d.is_floating_point == t.is_floating_point
        assert d.itemsize == t.itemsize
        assert d.to_real().name == str(t.to_real()).split(".")[1]
        assert d.to_complex() is d
    assert ember.float32.to_complex() is ember.complex64
    assert ember.float64.to_complex() is ember.complex128
    assert ember.float64.to_real() is ember.float64 and not ember.float64.is_complex


@pytest.mark.parametrize("name", ["complex32", "chalf"])
def test_complex32_is_refused_clearly(name):
    with pytest.raises(AttributeError, match="no complex32"):
        getattr(ember, name)


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promote_types_matches_torch(a, b):
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    if want is torch.complex32:
        return  # half with complex: PyTorch's complex32, which ember refuses (tested below)
    assert ember.promote_types(getattr(ember, a), getattr(ember, b)).name == str(want)[6:]


@pytest.mark.parametrize(
    "make",
    [
        lambda T: T.ones(2) + 1j,  # noqa: N803
        lambda T: T.ones(2, dtype=T.float64) + 1j,  # noqa: N803
        lambda T: T.ones(2, dtype=T.int64) * (2 - 1j),  # noqa: N803
        lambda T: T.ones(2) + T.tensor(1j, dtype=T.complex128),  # noqa: N803
        lambda T: T.ones(2, dtype=T.float64) + T.tensor(1j, dtype=T.complex64),  # noqa: N803
        lambda T: T.ones(2, dtype=T.complex64) + T.ones(2, dtype=T.float64),  # noqa: N803
        lambda T: T.ones(2, dtype=T.complex64) * 2.5,  # noqa: N803
        lambda T: T.ones(2, dtype=T.complex128) + T.tensor(1.0),  # noqa: N803
        lambda T: 1j * T.ones(2, dtype=T.bool),  # noqa: N803
    ],
)
def test_result_dtypes_match_torch(make):
    got, want = make(ember), make(torch)
    assert got.dtype.name == str(want.dtype)[6:]
    np.testing.assert_allclose(got.numpy(), want.numpy())


def test_python_complex_follows_default_dtype():
    assert ember.tensor(1 + 2j).dtype is ember.complex64
    assert ember.tensor([1, 2j]).dtype is ember.complex64
    assert ember.full((2,), 1j).dtype is ember.complex64
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor(1 + 2j).dtype is ember.complex128
        assert (ember.ones(2, dtype=ember.int32) + 1j).dtype is ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_factories(name):
    d, t = getattr(ember, name), getattr(torch, name)
    for fn in ("zeros", "ones", "empty"):
        got = getattr(ember, fn)(2, 3, dtype=d)
        assert got.dtype is d and tuple(got.shape) == (2, 3)
    np.testing.assert_array_equal(ember.ones(2, dtype=d).numpy(), torch.ones(2, dtype=t).numpy())
    np.testing.assert_array_equal(
        ember.full((2,), 1 - 2j, dtype=d).numpy(), torch.full((2,), 1 - 2j, dtype=t).numpy()
    )
    np.testing.assert_array_equal(
        ember.zeros_like(ember.ones(2, dtype=d)).numpy(), np.zeros(2, d.np)
    )


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_randn_splits_the_variance_between_parts(name):
    ember.manual_seed(0)
    z = ember.randn(200_000, dtype=getattr(ember, name)).numpy()
    assert z.dtype == getattr(np, name)
    for part in (z.real, z.imag):  # torch: each part N(0, 1/2), so E|z|^2 = 1
        assert abs(part.mean()) < 0.01 and abs(part.var() - 0.5) < 0.01
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.01


def test_item_tolist_numpy_round_trip():
    values = [[1 + 2j, -3.5j], [0.25, 1e-3 - 1j]]
    z = ember.tensor(values, dtype=ember.complex128)
    assert z.tolist() == torch.tensor(values, dtype=torch.complex128).tolist()
    assert z[0, 1].item() == -3.5j and isinstance(z[0, 0].item(), complex)
    assert complex(z[1, 0]) == 0.25
    array = z.numpy()
    assert array.dtype == np.complex128 and array.ctypes.data == z.data_ptr()
    shared = ember.from_numpy(array)
    shared[0, 0] = 5j
    assert array[0, 0] == 5j
    assert ember.from_numpy(np.ones(2, np.complex64)).dtype is ember.complex64


@pytest.mark.parametrize(
    "values,dtype",
    [
        (1 + 2j, "complex64"),
        ([1 + 2j, 3.5 - 1j], "complex128"),
        ([[1e-5 + 3j, 100], [-1 - 1j, 0]], "complex64"),
        ([[0.5 - 0.25j, 2 + 1e9j]], "complex64"),
        ([1, 2, -3j], "complex64"),
        ([], "complex64"),
        ([1 + 1j] * 1200, "complex64"),
    ],
)
def test_printing_matches_torch(values, dtype):
    got = repr(ember.tensor(values, dtype=getattr(ember, dtype)))
    want = repr(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert got == want.replace("torch.", "ember.")


def test_casting_complex_to_real_keeps_the_real_part_and_warns():
    z = ember.tensor([1 + 2j, -3 - 1j])
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        x = z.to(ember.float64)
    np.testing.assert_array_equal(x.numpy(), [1.0, -3.0])
    y = ember.zeros(2)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        y.copy_(z)
    np.testing.assert_array_equal(y.numpy(), [1.0, -3.0])
    np.testing.assert_array_equal(
        ember.tensor([1, 2]).to(ember.complex64).numpy(), np.array([1, 2], np.complex64)
    )


def test_is_complex():
    z, x = ember.ones(2, dtype=ember.complex64), ember.ones(2)
    assert ember.is_complex(z) and z.is_complex() and not ember.is_floating_point(z)
    assert not ember.is_complex(x) and not x.is_complex()
