"""``out=`` into a conjugate or negative view writes through the bits, as PyTorch's: the storage
receives conj/neg of the result, so that the view reads back the result (dispatcher/out.py)."""

# ruff: noqa: N803 - T is the library under test (ember or torch)
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .test_conj_bit import _pair

DTYPES = ("complex64", "complex128")


def _host(t):
    return t.resolve_conj().resolve_neg().numpy()


# The flagged views of z (3x4) written into, ``cols`` columns wide.
TARGETS = {
    "conj": lambda T, z, cols: z[:, :cols].conj(),
    "neg": lambda T, z, cols: T._neg_view(z[:, :cols]),
    "conj_offset": lambda T, z, cols: z.conj()[:, 4 - cols :],
    "conj_transposed": lambda T, z, cols: z.mT.conj()[:cols].mT,
}
CALLS = {
    "add": lambda T, x, y, out: T.add(x, y, alpha=2, out=out),
    "mul": lambda T, x, y, out: T.mul(x, y.conj(), out=out),
    "exp": lambda T, x, y, out: T.exp(x, out=out),
    "matmul": lambda T, x, y, out: T.matmul(x[:, :3], y[:, :3].mH, out=out),
    "addmm": lambda T, x, y, out: T.addmm(y[:, :3], x[:, :3].conj(), y[:, :3], out=out),
    "linear": lambda T, x, y, out: T.nn.functional.linear(x, y.conj()[:3], out=out),
    "sum": lambda T, x, y, out: T.sum(x.mT, 0, out=out),
    "cumsum": lambda T, x, y, out: T.cumsum(x, 1, out=out),
}


def _target(T, name, z, call):
    return TARGETS[name](T, z, 3 if call in ("matmul", "addmm", "linear", "sum") else 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_out_is_written_through_the_bits(call, target, dtype):
    (x, tx), (y, ty), (z, tz) = (_pair(dtype, (3, 4), s) for s in range(3))
    out, tout = _target(ember, target, z, call), _target(torch, target, tz, call)
    if call == "sum":  # a result of one row
        out, tout = out[0], tout[0]
    got, want = CALLS[call](ember, x, y, out), CALLS[call](torch, tx, ty, tout)
    assert got is out
    assert (got.is_conj(), got.is_neg()) == (want.is_conj(), want.is_neg())
    tol = 1e-5 if dtype == "complex64" else 1e-12
    np.testing.assert_allclose(_host(got), _host(want), rtol=tol, atol=tol)
    np.testing.assert_allclose(z.numpy(), tz.numpy(), rtol=tol, atol=tol)  # the storage


def test_out_into_the_negative_imaginary_part():
    """``z.conj().imag`` is a real view with the negative bit: a real out= writes -result."""
    z, tz = _pair("complex128", (3, 4))
    w = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4)
    ember.sin(ember.tensor(w.numpy()), out=z.conj().imag)
    torch.sin(w, out=tz.conj().imag)
    np.testing.assert_allclose(z.numpy(), tz.numpy(), rtol=1e-12)


def test_out_resized_through_the_bit():
    """An empty conjugate view is resized, then written through the bit."""
    z, tz = ember.zeros(0, dtype=ember.complex128), torch.zeros(0, dtype=torch.complex128)
    (x, tx) = _pair("complex128", shape=(5,))
    got, want = ember.exp(x, out=z.conj()), torch.exp(tx, out=tz.conj())
    np.testing.assert_allclose(_host(got), _host(want), rtol=1e-12)
    np.testing.assert_allclose(z.numpy(), tz.numpy(), rtol=1e-12)
