"""Complex products on xpu (CLBlast C/Zgemm) and CUDA (cuBLAS, or its emulator) against PyTorch:
a conjugate view whose memory is column-major (``x.mH``, ``x.conj().T``) reaches the GEMM as its
conjugate transpose (CLBlastTransposeConjugate, CUBLAS_OP_C) without a copy; other conjugate
views are materialized first (neither BLAS has a conjugate without a transpose), negative bits
fold into alpha, and layouts no BLAS describes are packed on the device."""

# ruff: noqa: N803 - T is the library under test (ember or torch)
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatcher.registry import FALLBACK_COUNTS

from ..conftest import available_device_types

DEVICES = [d for d in available_device_types() if d in ("xpu", "cuda")]
TOLERANCE = {"complex64": 2e-5, "complex128": 1e-12}

# name -> (program over (T, a, b) of shapes a: 6x4, b: 6x5, operands materialized by ember)
PROGRAMS = {
    "a.mH @ b": (lambda T, a, b: a.mH @ b, 0),
    "a.conj().T @ b": (lambda T, a, b: a.conj().T @ b, 0),
    "b.mH @ a": (lambda T, a, b: T.mm(b.mH, a), 0),
    "both operands": (lambda T, a, b: a[:4].mH @ b[:4, :4].mH, 0),
    "plain transposed": (lambda T, a, b: a.mT @ b, 0),
    "row-major conj (copied)": (lambda T, a, b: a.conj() @ b[:4], 1),
    "a.mH @ b.conj() (b copied)": (lambda T, a, b: a.mH @ b.conj(), 1),
    "negative view": (lambda T, a, b: T._neg_view(a.mH) @ b, 0),
    "negative both": (lambda T, a, b: T._neg_view(a.mH) @ T._neg_view(b), 0),
    "strided conj (column-major, ld 12)": (lambda T, a, b: a[::2].mH @ b[::2], 0),
    "packed (no BLAS layout)": (lambda T, a, b: a[::2, ::2].mH @ b[::2, ::2], 1),
    "plain packed": (lambda T, a, b: a.mT[::2, ::3] @ b[::3], 0),
    "vector": (lambda T, a, b: a[:, :1].mH @ b, 0),
    "empty inner dim": (lambda T, a, b: a[:0].mH @ b[:0], 0),
}
BATCHED = {
    "bmm(a.mH, b)": (lambda T, a, b: T.bmm(a.mH, b), 0),
    "matmul broadcast a[0].mH": (lambda T, a, b: a[0].mH @ b, 0),
    "bmm(a.mT.conj(), b)": (lambda T, a, b: T.bmm(a.mT.conj(), b), 0),
    "bmm of a row-major conj (copied)": (lambda T, a, b: T.bmm(a.mT.contiguous().conj(), b), 1),
}


def _operands(dtype, shapes, device):
    rng = np.random.default_rng(0)
    values = [rng.normal(size=s) + 1j * rng.normal(size=s) for s in shapes]
    ours = [ember.tensor(v, dtype=getattr(ember, dtype), device=device) for v in values]
    return ours, [torch.tensor(v, dtype=getattr(torch, dtype)) for v in values]


def _check(program, copies, dtype, shapes, device, materialized):
    (a, b), (ta, tb) = _operands(dtype, shapes, device)
    falls_back = FALLBACK_COUNTS["mm"] + FALLBACK_COUNTS["bmm"]
    materialized[0] = 0
    got, want = program(ember, a, b), program(torch, ta, tb)
    assert materialized[0] == copies
    assert FALLBACK_COUNTS["mm"] + FALLBACK_COUNTS["bmm"] == falls_back  # ran on the device
    assert got.device.type == device and tuple(got.shape) == tuple(want.shape)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(
        got.cpu().resolve_conj().numpy(), want.resolve_conj().numpy(), rtol=tol, atol=tol
    )


# (program, operands copied, operand shapes): plain and batched products
CASES = {name: (*PROGRAMS[name], [(6, 4), (6, 5)]) for name in PROGRAMS} | {
    name: (*BATCHED[name], [(3, 6, 4), (3, 6, 5)]) for name in BATCHED
}


@pytest.mark.skipif(not DEVICES, reason="neither xpu nor cuda is available")
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_product_of_conjugate_views_on_the_device(name, dtype, device, materialized):
    program, copies, shapes = CASES[name]
    _check(program, copies, dtype, shapes, device, materialized)


@pytest.mark.skipif(not DEVICES, reason="neither xpu nor cuda is available")
@pytest.mark.parametrize("device", DEVICES)
def test_gradient_through_a_conjugate_transpose(device):
    (a, b), (ta, tb) = _operands("complex128", [(6, 4), (6, 5)], device)
    for t in (a, b, ta, tb):
        t.requires_grad_()
    (a.mH @ b).abs().sum().backward()
    (ta.mH @ tb).abs().sum().backward()
    for got, want in ((a, ta), (b, tb)):
        np.testing.assert_allclose(
            got.grad.cpu().resolve_conj().numpy(), want.grad.resolve_conj().numpy(), rtol=1e-10
        )
