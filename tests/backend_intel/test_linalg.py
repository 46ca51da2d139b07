"""mm/bmm on xpu: CLBlast on every operand layout (in place, transposed, packed), half dtypes
through float32, integers and the built-in tiled kernel."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from ember_backend_intel.kernels import linalg

import ember
from ember.dispatcher.devices import REGISTRY

TOL = {np.float32: 1e-5, np.float64: 1e-12, np.float16: 2e-2}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_mm_on_every_layout(layouts, rng, dtype):
    a = rng.standard_normal((9, 6)).astype(dtype)
    b = rng.standard_normal((6, 5)).astype(dtype)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for name_a, x in layouts(a).items():
        for name_b, y in layouts(b).items():
            got = (x @ y).cpu().numpy().astype(np.float64)
            np.testing.assert_allclose(
                got, want, rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"{name_a} @ {name_b}"
            )


def test_bfloat16_and_integers(rng):
    a = rng.integers(-9, 9, (7, 4))
    b = rng.integers(-9, 9, (4, 3))
    for dtype in (ember.bfloat16, ember.int64, ember.int32, ember.uint8):
        x, y = ember.tensor(a.tolist(), dtype=dtype), ember.tensor(b.tolist(), dtype=dtype)
        want = (x @ y).numpy()
        assert (x.to("xpu") @ y.to("xpu")).cpu().numpy().tolist() == want.tolist()


def test_bmm_with_broadcast_and_transposed_batches(rng):
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    b = rng.standard_normal((4, 6, 3)).astype(np.float32)
    x, y = ember.from_numpy(a).to("xpu"), ember.from_numpy(b).to("xpu")
    np.testing.assert_allclose((x @ y).cpu().numpy(), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose((x @ y[0]).cpu().numpy(), a @ b[0], rtol=1e-5, atol=1e-5)
    xt = ember.from_numpy(np.ascontiguousarray(a.transpose(0, 2, 1))).to("xpu").transpose(1, 2)
    np.testing.assert_allclose((xt @ y).cpu().numpy(), a @ b, rtol=1e-5, atol=1e-5)
    one = y[:1].expand(4, 6, 3)  # a stride-0 batch
    np.testing.assert_allclose((x @ one).cpu().numpy(), a @ b[:1], rtol=1e-5, atol=1e-5)


def test_empty_inner_dimension_gives_zeros():
    out = ember.ones(3, 0, device="xpu") @ ember.ones(0, 2, device="xpu")
    assert out.tolist() == [[0.0, 0.0]] * 3


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_tiled_kernel(rng, dtype):
    """The kernel used without CLBlast, called directly on strided operands."""
    dev = REGISTRY.backend("xpu").runtime.devices[0]
    a = (rng.standard_normal((3, 37, 20)) * 5).astype(dtype)
    b = (rng.standard_normal((3, 20, 19)) * 5).astype(dtype)
    x = ember.from_numpy(a).to("xpu")
    y = ember.from_numpy(np.ascontiguousarray(b.transpose(0, 2, 1))).to("xpu").transpose(1, 2)
    out = ember.empty(3, 37, 19, dtype=x.dtype, device="xpu")
    linalg.tiled(dev, out, x, y, 3, (37, 20, 19), x.stride(), y.stride())
    np.testing.assert_allclose(out.cpu().numpy(), a @ b, rtol=1e-5, atol=1e-4)


def test_clblast_is_used_when_installed():
    gemm = linalg._Gemm(REGISTRY.backend("xpu").runtime)
    if gemm.blas is None:
        pytest.skip(f"CLBlast is not installed here: {gemm.missing}")
    assert "clblast" in gemm.blas.path.lower()


def test_cpu_devices_give_clblast_ember_parameters(rng):
    """On a CPU-type device (PoCL) CLBlast takes ember's kernel parameters (it must accept every
    one of them), and products large enough for its tiled kernel stay exact on any layout."""
    from ember_backend_intel import clblast

    gemm = linalg._Gemm(REGISTRY.backend("xpu").runtime)
    if gemm.blas is None:
        pytest.skip(f"CLBlast is not installed here: {gemm.missing}")
    dev = REGISTRY.backend("xpu").runtime.devices[0]
    if not dev.cpu:
        pytest.skip(f"{dev.name} is not a CPU device: CLBlast keeps its own tuning there")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gemm.blas.tune(dev, clblast.CPU_PARAMETERS)
    for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        a = rng.standard_normal((70, 130)).astype(dtype)
        b = rng.standard_normal((90, 130)).astype(dtype)  # used transposed
        got = ember.from_numpy(a).to("xpu") @ ember.from_numpy(b).to("xpu").t()
        np.testing.assert_allclose(got.cpu().numpy(), a @ b.T, rtol=tol, atol=tol)
