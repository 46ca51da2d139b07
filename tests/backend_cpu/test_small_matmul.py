"""The direct loop for small float32/float64 products (csrc/matmul.c, "small float products"),
against torch.bmm/matmul: every kernel width (p up to 8, 16, 32, 64), row blocks with a partial
last block, k = 1, operands transposed, strided, flipped or broadcast, NaN and inf, the split
over threads, and the sizes around the thresholds (moved with ember_matmul_set_small)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ember_backend_cpu._kernels import lib

import ember

# The defaults in matmul.c's `small` struct: multiply-adds a matrix (the loop takes up to
# SMALL_WORK / 8, or up to SMALL_WORK when b's packing is cheap), and in all for threads.
SMALL_WORK, SMALL_PARALLEL = 8192, 65536
TOLERANCE = {ember.float32: dict(rtol=1e-5, atol=1e-5), ember.float64: dict(rtol=1e-12, atol=1e-12)}
FLOATS = [ember.float32, ember.float64]


def _pair(shape_a, shape_b, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape_a).astype(dtype.np)
    b = rng.standard_normal(shape_b).astype(dtype.np)
    return a, b


def _layout(name, x: np.ndarray):
    """(ember tensor, torch tensor) holding x's values, laid out as named."""
    if name == "contiguous":
        return ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    if name == "transposed":  # stored column-major, as k.transpose(-2, -1)
        stored = np.ascontiguousarray(x.swapaxes(-1, -2))
        e, t = ember.from_numpy(stored), torch.from_numpy(stored)
        return e.transpose(-2, -1), t.transpose(-2, -1)
    if name == "strided":  # every other column of a wider matrix
        wide = np.repeat(x, 2, axis=-1)
        return ember.from_numpy(wide)[..., ::2], torch.from_numpy(wide)[..., ::2]
    if name == "flipped":  # negative strides (torch has none: it gets a copy)
        stored = np.ascontiguousarray(x[..., ::-1, ::-1])
        return ember.from_numpy(stored).flip(-1).flip(-2), torch.from_numpy(x.copy())
    if name == "broadcast":  # one matrix expanded over the batch (batch stride 0)
        one = x[:1].copy()
        return (ember.from_numpy(one).expand(*x.shape), torch.from_numpy(one).expand(*x.shape))
    raise ValueError(name)


def _check(batch, n, k, p, dtype, layout_a="contiguous", layout_b="contiguous", seed=0):
    a_np, b_np = _pair((batch, n, k), (batch, k, p), dtype, seed)
    a, ta = _layout(layout_a, a_np)
    b, tb = _layout(layout_b, b_np)
    got = ember.bmm(a, b)
    want = torch.bmm(ta, tb)
    torch.testing.assert_close(torch.from_numpy(got.numpy()), want, **TOLERANCE[dtype])


LAYOUTS = ["contiguous", "transposed", "strided", "flipped", "broadcast"]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("layout_a", LAYOUTS)
@pytest.mark.parametrize("layout_b", LAYOUTS)
def test_layouts(dtype, layout_a, layout_b):
    """minGPT's attention shapes, every operand layout on either side."""
    _check(192, 6, 16, 6, dtype, layout_a, layout_b)
    _check(7, 6, 6, 16, dtype, layout_a, layout_b, seed=1)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    "sizes",
    [
        (1, 1, 1, 1),
        (1, 5, 1, 3),  # k = 1
        (3, 1, 7, 1),  # one row, one column
        (2, 9, 3, 8),  # a partial last row block; p fills the narrowest width
        (2, 4, 5, 9),  # p one past a width
        (2, 3, 4, 16),
        (2, 5, 4, 17),
        (2, 2, 3, 32),
        (2, 3, 2, 33),
        (1, 1, 64, 64),
        (1, 2, 64, 64),  # 8192 multiply-adds: the largest that runs here
        (1, 64, 1, 64),
        (1, 2, 33, 63),
    ],
)
def test_every_width(dtype, sizes):
    _check(*sizes, dtype, "contiguous", "transposed")
    _check(*sizes, dtype, "transposed", "contiguous", seed=1)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_thresholds(dtype):
    """Products just inside and just outside the loop's limits agree with torch either way,
    and the loop (moved to take a product, or switched off) gives the same values as BLAS."""
    for sizes in [
        (2, 32, 16, 16),  # 8192: the loop
        (2, 32, 16, 17),  # 8704: oneDNN / OpenBLAS
        (2, 2, 8, 64),  # 1024 with b packed: the loop
        (2, 2, 9, 64),  # 1152 with b packed, few rows: oneDNN / OpenBLAS
        (2, 8, 9, 64),  # 4608, 8 rows reuse the packed b: the loop
        (2, 65, 1, 4),
        (1, 64, 65, 1),
    ]:
        _check(*sizes, dtype, "contiguous", "transposed")
        _check(*sizes, dtype, "transposed", "contiguous", seed=1)
    a_np, b_np = _pair((3, 20, 30), (3, 30, 10), dtype)
    a, b = ember.from_numpy(a_np), ember.from_numpy(b_np)
    try:
        lib.ember_matmul_set_small(0, SMALL_PARALLEL)
        blas = ember.bmm(a, b).numpy()
        lib.ember_matmul_set_small(1 << 20, SMALL_PARALLEL)
        loop = ember.bmm(a, b).numpy()
    finally:
        lib.ember_matmul_set_small(SMALL_WORK, SMALL_PARALLEL)
    np.testing.assert_allclose(loop, blas, **TOLERANCE[dtype])
    torch.testing.assert_close(
        torch.from_numpy(loop), torch.from_numpy(a_np) @ torch.from_numpy(b_np), **TOLERANCE[dtype]
    )


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_threads(dtype, threads):
    """Stacks split over 1, 2 and 3 threads (unequal chunks), with a stack of fewer matrices
    than threads, and with the split threshold lowered so that every stack splits."""
    for parallel in (SMALL_PARALLEL, 0):
        lib.ember_matmul_set_small(SMALL_WORK, parallel)
        try:
            _check(192, 6, 16, 6, dtype, "contiguous", "transposed")
            _check(2, 6, 16, 6, dtype, "transposed", "broadcast")
            _check(37, 16, 16, 16, dtype, "flipped", "contiguous")
        finally:
            lib.ember_matmul_set_small(SMALL_WORK, SMALL_PARALLEL)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nan_and_inf_propagate(dtype):
    a_np, b_np = _pair((3, 5, 4), (3, 4, 6), dtype)
    a_np[0, 1, 2] = np.nan
    a_np[1, 0, 0] = np.inf
    b_np[2, 3, :] = -np.inf
    b_np[1, 0, 1] = 0.0  # inf * 0: NaN
    got = ember.bmm(ember.from_numpy(a_np), ember.from_numpy(b_np)).numpy()
    want = torch.bmm(torch.from_numpy(a_np), torch.from_numpy(b_np)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(want))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], **TOLERANCE[dtype])


def test_attention_gradients_float64():
    """minGPT's q @ k^T and att @ v on 4-D (batch, heads, seq, dim) tensors: values and
    gradients, whose products run with transposed operands, against torch in float64."""
    rng = np.random.default_rng(3)
    q_np, k_np, v_np = (rng.standard_normal((4, 3, 6, 16)) for _ in range(3))
    e = [ember.from_numpy(x.copy()).requires_grad_() for x in (q_np, k_np, v_np)]
    t = [torch.from_numpy(x.copy()).requires_grad_() for x in (q_np, k_np, v_np)]
    outs = []
    for q, k, v in (e, t):
        att = (q @ k.transpose(-2, -1)) * 0.25
        y = att.softmax(dim=-1) @ v
        (y * y).sum().backward()
        outs.append(y)
    tol = TOLERANCE[ember.float64]
    torch.testing.assert_close(torch.from_numpy(outs[0].detach().numpy()), outs[1].detach(), **tol)
    for x, y in zip(e, t):
        torch.testing.assert_close(torch.from_numpy(x.grad.numpy()), y.grad, **tol)
