"""Matrix products of conjugate/negative views against PyTorch: the bits reach cgemm/zgemm
(ConjTrans, ConjNoTrans, alpha = -1) without materializing an operand (dispatcher/mathbits.py
``PRODUCTS``/``GEMMS``, dispatcher/complex_gemm.py), with the values and gradients of torch."""

# ruff: noqa: N803 - T is the library under test (ember or torch)
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .test_conj_bit import _pair

DTYPES = ("complex64", "complex128")
TOLERANCE = {"complex64": 1e-5, "complex128": 1e-12}


# Each program takes the library and square 4x4 operands a, b, c (3-D stacks for the batched).
PROGRAMS = {
    "conj_at": lambda T, a, b, c: a.conj() @ b,
    "mH_at": lambda T, a, b, c: a.mH @ b,
    "at_mH": lambda T, a, b, c: a @ b.mH,
    "conj_at_conj": lambda T, a, b, c: a.conj() @ b.conj(),
    "mH_at_mH": lambda T, a, b, c: a.mH @ b.mH,
    "conj_strided": lambda T, a, b, c: a.conj()[::2, ::2] @ b[::2].conj(),
    "neg_view": lambda T, a, b, c: T._neg_view(a) @ b.mH,
    "neg_conj": lambda T, a, b, c: T._neg_view(a.conj()) @ T._neg_view(b),
    "mm": lambda T, a, b, c: T.mm(a.mH, b),
    "addmm": lambda T, a, b, c: T.addmm(c.conj(), a.mH, b, beta=2, alpha=1 - 1j),
    "matmul_1d": lambda T, a, b, c: T.matmul(a.mH, b[0].conj()),
    "mv": lambda T, a, b, c: T.mv(a.conj(), b[:, 1].conj()),
    "addmv": lambda T, a, b, c: T.addmv(c[0], a.mH, b[1].conj()),
    "dot": lambda T, a, b, c: T.dot(a[0].conj(), b[1]),
    "vdot": lambda T, a, b, c: T.vdot(a[0], b[1].conj()),
    "inner": lambda T, a, b, c: T.inner(a.conj(), b.mH),
    "linear": lambda T, a, b, c: T.nn.functional.linear(a.conj(), b.conj(), c[0].conj()),
    "linear_mH": lambda T, a, b, c: T.nn.functional.linear(a, b.mH),
}
BATCHED = {
    "bmm": lambda T, a, b, c: T.bmm(a.mH, b.conj()),
    "matmul_3d": lambda T, a, b, c: a.conj() @ b.mH,
    "matmul_broadcast": lambda T, a, b, c: a.conj() @ b[0].mH,
    "baddbmm": lambda T, a, b, c: T.baddbmm(c.conj(), a.conj(), b.mH, alpha=2j),
    "addbmm": lambda T, a, b, c: T.addbmm(c[0], a.mH, b.conj()),
}


def _operands(dtype, shape):
    return zip(*(_pair(dtype, shape, seed) for seed in range(3)))


def _compare(program, dtype, shape):
    (a, b, c), (ta, tb, tc) = _operands(dtype, shape)
    got, want = program(ember, a, b, c), program(torch, ta, tb, tc)
    assert got.is_conj() == want.is_conj() and got.dtype.itemsize == want.dtype.itemsize
    assert tuple(got.shape) == tuple(want.shape)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(
        got.resolve_conj().numpy(), want.resolve_conj().numpy(), rtol=tol, atol=tol
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_product_of_flagged_operands_matches_torch(name, dtype):
    _compare(PROGRAMS[name], dtype, (4, 4))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BATCHED))
def test_batched_product_of_flagged_operands_matches_torch(name, dtype):
    _compare(BATCHED[name], dtype, (3, 4, 4))


@pytest.mark.parametrize(
    "name", sorted(set(PROGRAMS) - {"dot", "vdot", "addmm", "addmv", "linear"})
)
def test_the_gemm_reads_the_bits_without_a_copy(name, materialized):
    (a, b, c), _ = _operands("complex64", (4, 4))
    PROGRAMS[name](ember, a, b, c)
    assert materialized[0] == 0


@pytest.mark.parametrize("name", sorted(BATCHED))
def test_the_batched_gemm_reads_the_bits_without_a_copy(name, materialized):
    (a, b, c), _ = _operands("complex64", (3, 4, 4))
    BATCHED[name](ember, a, b, c)
    assert materialized[0] == (name == "baddbmm")  # its added c.conj(): an elementwise op


@pytest.mark.parametrize("name", ["mH_at", "conj_at", "addmm", "linear", "mv", "vdot"])
def test_gradients_match_torch(name):
    (a, b, c), (ta, tb, tc) = _operands("complex128", (4, 4))
    for t in (a, b, c, ta, tb, tc):
        t.requires_grad_()
    PROGRAMS[name](ember, a, b, c).abs().sum().backward()
    PROGRAMS[name](torch, ta, tb, tc).abs().sum().backward()
    for got, want in ((a, ta), (b, tb), (c, tc)):
        if want.grad is None:
            assert got.grad is None
        else:
            np.testing.assert_allclose(
                got.grad.resolve_conj().numpy(), want.grad.resolve_conj().numpy(), rtol=1e-10
            )


@pytest.mark.parametrize(
    "name", ["mH_at", "conj_at_conj", "neg_view", "neg_conj", "addmm", "linear"]
)
def test_gradcheck(name):
    (a, b, c), _ = _operands("complex128", (3, 3))
    inputs = tuple(t.requires_grad_() for t in (a, b, c))
    assert ember.autograd.gradcheck(lambda *t: PROGRAMS[name](ember, *t), inputs)


def test_batched_gradcheck():
    (a, b, c), _ = _operands("complex128", (2, 3, 3))
    inputs = tuple(t.requires_grad_() for t in (a, b, c))
    assert ember.autograd.gradcheck(lambda *t: BATCHED["baddbmm"](ember, *t), inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["dot", "vdot"])
@pytest.mark.parametrize("bits", [(False, True), (True, False), (True, True)])
def test_dot_of_conjugate_views_is_torch_s(op, bits, dtype):
    """dot/vdot of conjugate views give a conjugate view where PyTorch's do."""

    def program(T, a, b, c):
        return getattr(T, op)(a[0].conj() if bits[0] else a[0], b[1].conj() if bits[1] else b[1])

    _compare(program, dtype, (4, 4))
