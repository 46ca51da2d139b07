"""Complex views and parts against PyTorch: real/imag (views that write through), view_as_real
and view_as_complex (with PyTorch's refusals), conj and its bit queries, polar, angle, abs and
complex(real, imag)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import ember

# Complex-only rows (no real dtype to sample): the generated op tests cover their refusals,
# this file their values (tests/ops/test_coverage.py checks the list).
COMPLEX_ROWS_TESTED = ("view_as_real", "_conj")  # _conj: test_conj_bit.py

DTYPES = ("complex64", "complex128")


def _values(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def _pair(values, dtype):
    return ember.tensor(values, dtype=getattr(ember, dtype)), torch.tensor(
        values, dtype=getattr(torch, dtype)
    )


def _same(got, want):
    want = want.resolve_conj().detach()
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    assert tuple(got.shape) == tuple(want.shape)
    got = got.resolve_conj().resolve_neg().detach()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_real_imag_are_views(dtype):
    z, tz = _pair(_values((2, 3)), dtype)
    _same(z.real, tz.real)
    _same(z.imag, tz.imag)
    _same(ember.real(z), torch.real(tz))
    z.real[0] = 7.0
    tz.real[0] = 7.0
    z.imag.mul_(2)
    tz.imag.mul_(2)
    _same(z, tz)


def test_real_of_real_is_itself_and_imag_refused():
    x = ember.ones(3)
    assert x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        x.imag  # noqa: B018 - the property raises


@pytest.mark.parametrize("dtype", DTYPES)
def test_view_as_real_and_back(dtype):
    z, tz = _pair(_values((4, 3)), dtype)
    _same(ember.view_as_real(z), torch.view_as_real(tz))
    sliced, tsliced = z[1:, ::2], tz[1:, ::2]
    r, tr = ember.view_as_real(sliced), torch.view_as_real(tsliced)
    _same(r, tr)
    assert r.stride() == tr.stride() and r.storage_offset() == tr.storage_offset()
    back = ember.view_as_complex(r)
    _same(back, torch.view_as_complex(tr))
    r[0, 0, 1] = 5.0
    assert sliced[0, 0].item() == pytest.approx(complex(sliced[0, 0].item().real, 5.0))


@pytest.mark.parametrize(
    "make",
    [
        lambda T: T.ones(3, 2, dtype=T.int32),  # not float  # noqa: N803
        lambda T: T.ones(3, 3),  # last dim not 2  # noqa: N803
        lambda T: T.ones(2, 3).t(),  # last dim stride not 1  # noqa: N803
        lambda T: T.ones(7)[1:].reshape(3, 2),  # odd storage offset  # noqa: N803
        lambda T: T.ones(3, 3, 2).transpose(0, 1)[:, 1:],  # fine: a strided control  # noqa: N803
        lambda T: T.ones(3, 5)[:, 1:3],  # odd row stride  # noqa: N803
    ],
)
def test_view_as_complex_refusals_match_torch(make):
    try:
        want = torch.view_as_complex(make(torch))
    except RuntimeError as error:
        with pytest.raises(RuntimeError, match=re.escape(str(error).split("\n")[0])):
            ember.view_as_complex(make(ember))
    else:
        _same(ember.view_as_complex(make(ember)), want)


def test_view_as_real_refuses_real():
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        ember.view_as_real(ember.ones(2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_conj_semantics(dtype):
    z, tz = _pair(_values((3,)), dtype)
    _same(z.conj(), tz.conj())
    _same(ember.conj_physical(z), torch.conj_physical(tz))
    _same(z.conj().resolve_conj(), tz.conj().resolve_conj())
    assert not ember.is_conj(z) and not z.resolve_conj().is_conj()
    x = ember.ones(2)
    assert x.conj() is x and not x.conj().is_conj()  # PyTorch: conj of a real tensor is itself
    _same(ember.conj_physical(x), torch.conj_physical(torch.ones(2)))


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_complex_and_polar(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.1, 2, (2, 3)), rng.uniform(-3, 3, (3,))
    ea, eb = (
        ember.tensor(a, dtype=getattr(ember, dtype)),
        ember.tensor(b, dtype=getattr(ember, dtype)),
    )
    ta, tb = (
        torch.tensor(a, dtype=getattr(torch, dtype)),
        torch.tensor(b, dtype=getattr(torch, dtype)),
    )
    _same(ember.complex(ea, eb), torch.complex(ta, tb))
    _same(ember.polar(ea, eb), torch.polar(ta, tb))


def test_complex_refuses_mixed_and_integer_parts():
    with pytest.raises(RuntimeError, match="Float or Double"):
        ember.complex(ember.ones(2, dtype=ember.int32), ember.ones(2, dtype=ember.int32))
    with pytest.raises(RuntimeError, match="scalar type"):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_abs_and_angle_are_real(dtype):
    values = _values((5,))
    values[0] = 0
    z, tz = _pair(values, dtype)
    _same(z.abs(), tz.abs())
    _same(ember.angle(z), torch.angle(tz))


def test_angle_of_real_numbers():
    x = [-2.0, -0.0, 0.0, 3.0, float("nan"), float("-inf")]
    _same(ember.angle(ember.tensor(x)), torch.angle(torch.tensor(x)))
    _same(ember.angle(ember.tensor([-1, 2])), torch.angle(torch.tensor([-1, 2])))
