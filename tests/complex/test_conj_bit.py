"""The lazy conjugate and negative bits against PyTorch: ``conj()`` is a view that shares storage,
views keep the bits, other ops see the conjugated values, in-place ops write through the
conjugation, and host reads (numpy, repr, save) behave as PyTorch's (dispatcher/mathbits.py)."""

# ruff: noqa: N803 - T is the library under test (ember or torch)
from __future__ import annotations

import gc
import re

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.layers import STACK
from ember.dispatcher.mathbits import LAYER

DTYPES = ("complex64", "complex128")


def _pair(dtype, shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    return (
        ember.tensor(values, dtype=getattr(ember, dtype)),
        torch.tensor(values, dtype=getattr(torch, dtype)),
    )


def _host(t):
    return t.detach().resolve_conj().resolve_neg().numpy()


def _same(got, want):
    assert got.is_conj() == want.is_conj(), (got.is_conj(), want.is_conj())
    assert got.is_neg() == want.is_neg(), (got.is_neg(), want.is_neg())
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_host(got), _host(want), rtol=1e-6, atol=1e-6)


# What each library gives for one program on a conjugate view ``c`` of ``x``: flags and values.
PROGRAMS = {
    "conj": lambda T, c: c,
    "conj_conj": lambda T, c: c.conj(),
    "clone": lambda T, c: c.clone(),
    "detach": lambda T, c: c.detach(),
    "contiguous": lambda T, c: c.contiguous(),
    "to_dtype": lambda T, c: c.to(T.complex128),
    "to_same": lambda T, c: c.to("cpu"),
    "resolve_conj": lambda T, c: c.resolve_conj(),
    "conj_physical": lambda T, c: T.conj_physical(c),
    "select": lambda T, c: c[1],
    "slice": lambda T, c: c[:, 1:],
    "transpose": lambda T, c: c.t(),
    "reshape": lambda T, c: c.reshape(3, 2),
    "reshape_copy": lambda T, c: c.t().reshape(6),
    "expand": lambda T, c: c[None].expand(2, 2, 3),
    "unbind": lambda T, c: c.unbind(0)[1],
    "flip": lambda T, c: c.flip(0),
    "add": lambda T, c: c + 1,
    "mul_self": lambda T, c: c * c,
    "mixed": lambda T, c: c * c.conj(),
    "exp": lambda T, c: c.exp(),
    "sum": lambda T, c: c.sum(0),
    "matmul": lambda T, c: c @ c.t(),
    "cat": lambda T, c: T.cat([c, c.conj()]),
    "real": lambda T, c: c.real,
    "imag": lambda T, c: c.imag,
    "abs": lambda T, c: c.abs(),
    "angle": lambda T, c: c.angle(),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_torch(name, dtype):
    x, tx = _pair(dtype)
    _same(PROGRAMS[name](ember, x.conj()), PROGRAMS[name](torch, tx.conj()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_conj_is_a_view_of_the_same_storage(dtype):
    x, _ = _pair(dtype)
    c = x.conj()
    assert c.is_conj() and not x.is_conj()
    assert c.data_ptr() == x.data_ptr() and c._base is x
    back = c.conj()
    assert not back.is_conj() and back.data_ptr() == x.data_ptr()
    assert c.resolve_conj().data_ptr() != x.data_ptr()
    assert x.resolve_conj() is x


def test_real_tensors_have_no_bit():
    x = ember.ones(3)
    assert x.conj() is x and not x.is_conj() and not ember.is_conj(x)
    with pytest.raises(RuntimeError, match="_conj"):
        ember._conj(x)


def _write_programs():
    return {
        "setitem": lambda T, x: x.conj().__setitem__(0, T.tensor([5 + 6j, 1j, -2.0])),
        "mul_": lambda T, x: x.conj()[:, 1].mul_(2 - 1j),
        "copy_": lambda T, x: x.conj().copy_(T.ones_like(x) * (1 + 2j)),
        "fill_": lambda T, x: x.conj()[1].fill_(3 - 4j),
        "conj_physical_": lambda T, x: x.conj().conj_physical_(),
        "imag_write": lambda T, x: x.conj().imag.fill_(7.0),
        "add_": lambda T, x: x.conj().add_(1 + 2j),
        "imag_add_": lambda T, x: x.conj().imag.add_(1.5),
        "sin_": lambda T, x: x.conj()[1].sin_(),
        "neg_view_mul_": lambda T, x: x._neg_view().mul_(3j),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(_write_programs()))
def test_in_place_writes_through_the_conjugation(name, dtype):
    x, tx = _pair(dtype)
    _write_programs()[name](ember, x)
    _write_programs()[name](torch, tx)
    np.testing.assert_allclose(x.numpy(), tx.numpy(), rtol=1e-6)


def test_view_as_real_and_numpy_refuse_conjugate_views():
    x, tx = _pair("complex64")
    for fn in (lambda T, c: T.view_as_real(c), lambda T, c: c.numpy()):
        with pytest.raises(RuntimeError) as want:
            fn(torch, tx.conj())
        with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
            fn(ember, x.conj())
    with pytest.raises(RuntimeError) as want:
        tx._neg_view().numpy()
    with pytest.raises(RuntimeError, match=re.escape(str(want.value))):
        x._neg_view().numpy()


@pytest.mark.parametrize("dtype", ("float64", "complex128"))
def test_neg_view(dtype):
    x, tx = _pair("complex128")
    if dtype == "float64":
        x, tx = x.real.clone(), tx.real.clone()
    n, tn = x._neg_view(), tx._neg_view()
    _same(n, tn)
    assert n.data_ptr() == x.data_ptr()
    _same(n.resolve_neg(), tn.resolve_neg())
    _same(n._neg_view(), tn._neg_view())
    _same(n * 2, tn * 2)
    n[0] = 1  # writes -1 into x
    tn[0] = 1
    np.testing.assert_allclose(x.numpy(), tx.numpy())


def test_real_views_keep_the_neg_bit():
    """view_as_real/view_as_complex of a negative view are negative views, as PyTorch's (the
    backward of view_as_complex relies on it for gradients that carry the bit)."""
    x, tx = _pair("complex128")
    _same(ember.view_as_real(x._neg_view()), torch.view_as_real(tx._neg_view()))
    r, tr = ember.view_as_real(x), torch.view_as_real(tx)
    _same(ember.view_as_complex(r._neg_view()), torch.view_as_complex(tr._neg_view()))
    _same(x._neg_view().real, tx._neg_view().real)


def test_host_reads_are_resolved():
    x, tx = _pair("complex128")
    c, tc = x.conj(), tx.conj()
    assert c.tolist() == tc.tolist()
    assert c[0, 1].item() == tc[0, 1].item()
    np.testing.assert_allclose(np.asarray(c), tc.resolve_conj().numpy())
    assert repr(c) == repr(c.resolve_conj())
    assert repr(c.imag) == repr(c.imag.resolve_neg())
    ember.testing.assert_close(c, c.resolve_conj())
    with pytest.raises(AssertionError):
        ember.testing.assert_close(c, x)


@pytest.mark.parametrize("writer", ("ember", "torch"))
def test_save_keeps_the_bits_as_torch(tmp_path, writer):
    """torch.save stores the raw storage and the bits as rebuild metadata; the loaded views
    share one storage again. Files written by either library load in ember and in torch."""
    x, tx = _pair("complex64")
    path = tmp_path / "c.pt"
    neg = tmp_path / "n.pt"  # ember refuses one file with complex and real views of a storage
    if writer == "ember":
        ember.save({"x": x, "c": x.conj()}, path)
        ember.save(x.conj().imag, neg)
    else:
        torch.save({"x": tx, "c": tx.conj()}, path)
        torch.save(tx.conj().imag, neg)
    got, want = ember.load(path), torch.load(path)
    for key in ("x", "c"):
        _same(got[key], want[key])
    got["x"][0, 0] = 1 + 1j
    want["x"][0, 0] = 1 + 1j
    _same(got["c"], want["c"])
    _same(ember.load(neg), torch.load(neg))


def test_deepcopy_resolves_the_bit():
    import copy

    x, tx = _pair("complex128")
    _same(copy.deepcopy(x.conj()), copy.deepcopy(tx.conj()))


def _loss(T, x, w):
    c = x.conj()
    y = c * w + c.exp()
    return (y.real * y.imag).sum() + (c.imag**2).sum() + (c @ c.t()).abs().sum()


def test_gradients_match_torch():
    x, tx = _pair("complex128", seed=1)
    w, tw = _pair("complex128", seed=2)
    for t in (x, w, tx, tw):
        t.requires_grad_()
    _loss(ember, x, w).backward()
    _loss(torch, tx, tw).backward()
    np.testing.assert_allclose(_host(x.grad), _host(tx.grad), rtol=1e-10)
    np.testing.assert_allclose(_host(w.grad), _host(tw.grad), rtol=1e-10)


def test_gradcheck_through_conj_views():
    x, _ = _pair("complex128", shape=(3,))
    x.requires_grad_()
    assert ember.autograd.gradcheck(lambda z: (z.conj() * z.conj().conj().exp()).imag, (x,))


def test_fallback_layer_lives_only_with_flagged_tensors():
    gc.collect()
    assert not STACK.installed(LAYER)
    x, _ = _pair("complex64")
    c = x.conj()
    views = [c[0], c.imag]
    assert STACK.installed(LAYER)
    del c, views
    gc.collect()
    assert not STACK.installed(LAYER)
