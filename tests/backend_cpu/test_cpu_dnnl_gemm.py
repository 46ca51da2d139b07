"""bfloat16 and float32 products on the CPU: oneDNN's matmul primitive (csrc/matmul_dnnl.c) and,
switched off, OpenBLAS's sgemm (on float32 copies for bfloat16). Both must give the exact product
of small integers rounded once, in every layout (oneDNN refuses some: those fall back to sgemm),
and random products within float32 accumulation of PyTorch's."""

from __future__ import annotations

import platform
import sys
import threading

import numpy as np
import pytest
import torch
from ember_backend_cpu._kernels import ffi, lib
from ember_backend_cpu.kernels import linalg
from test_cpu_linalg import LAYOUTS, _batch_layout, check, values

import ember

BF16 = ember.bfloat16
DNNL_DTYPES = [BF16, ember.float32]  # the dtypes matmul_dnnl.c takes
ON_X86_LINUX = sys.platform == "linux" and platform.machine() == "x86_64"


@pytest.fixture(params=["dnnl", "sgemm"])
def path(request):
    """Run the test with products on oneDNN, then on sgemm."""
    took = linalg.use_dnnl(ffi, lib, request.param == "dnnl")
    try:
        yield took
    finally:
        linalg.use_dnnl(ffi, lib)


def test_onednn_is_loaded_on_x86_linux():
    # backend_cpu depends on onednn-cpu-gomp there; anywhere else sgemm takes bf16 products.
    assert (linalg.dnnl_library() is not None) == ON_X86_LINUX
    assert linalg.use_dnnl(ffi, lib) == ON_X86_LINUX


@pytest.mark.parametrize("dtype", DNNL_DTYPES, ids=str)
@pytest.mark.parametrize("layout_b", ["contiguous", "transposed", "padded", "strided"])
@pytest.mark.parametrize("layout_a", LAYOUTS)
def test_mm_layouts(path, layout_a, layout_b, dtype):
    a_np, b_np = values((37, 70), dtype, 1), values((70, 29), dtype, 2)
    check(a_np, b_np, LAYOUTS[layout_a](a_np), LAYOUTS[layout_b](b_np), dtype)


@pytest.mark.parametrize("dtype", DNNL_DTYPES, ids=str)
@pytest.mark.parametrize("layout_a", ["contiguous", "transposed", "batch-broadcast"])
@pytest.mark.parametrize("layout_b", ["transposed", "reversed-batch", "batch-broadcast"])
def test_bmm_layouts(path, layout_a, layout_b, dtype):
    a_np, b_np = values((3, 20, 33), dtype, 3), values((3, 33, 18), dtype, 4)
    a, a_np = _batch_layout(layout_a, a_np)
    b, b_np = _batch_layout(layout_b, b_np)
    check(a_np, b_np, a, b, dtype, ember.bmm)


def test_random_products_match_pytorch(path):
    """Linear-layer shapes (x @ W.T, and backward's g @ W, g.T @ x) against PyTorch's bf16
    matmul: both accumulate in float32 and round once, so they differ by summation order only."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 96)).astype(np.float32)
    w = rng.standard_normal((80, 96)).astype(np.float32)
    g = rng.standard_normal((64, 80)).astype(np.float32)
    for left, right in [(x, w.T), (g, w), (g.T, x)]:
        ours = ember.from_numpy(left).to(BF16) @ ember.from_numpy(right).to(BF16)
        theirs = torch.from_numpy(left).bfloat16() @ torch.from_numpy(right).bfloat16()
        assert ours.dtype == BF16
        np.testing.assert_allclose(
            ours.float().numpy(), theirs.float().numpy(), rtol=2**-7, atol=2**-7 * 10
        )


def test_many_shapes_and_other_threads():
    """More shapes than a thread keeps primitives for (64), and products from new threads
    (each builds its own stream and primitives): every result exact."""
    errors = []

    def run(sizes):
        try:
            for n, k, p in sizes:
                a_np, b_np = values((n, k), BF16, n), values((k, p), BF16, p)
                check(a_np, b_np, ember.from_numpy(a_np), LAYOUTS["transposed"](b_np), BF16)
        except AssertionError as error:  # reported from the main thread
            errors.append(error)

    run([(n, 5, 3) for n in range(1, 70)] + [(1, 5, 3), (69, 5, 3)])
    threads = [threading.Thread(target=run, args=([(4, 9, t + 2)] * 3,)) for t in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
