"""ember.linalg on CUDA: the cuSOLVER binding's declarations, and the solver glue run by the CPU
emulator (EMBER_CUDA_EMULATOR=1, scipy's LAPACK standing in for cuSOLVER) against the CPU
backend. No GPU here: a real device runs tests/linalg with EMBER_TEST_DEVICES=cuda."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import ember
from ember.dispatcher import coverage
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.optable import OPS

pytest.importorskip("scipy")
NATIVE = ("linalg_lu_factor_ex", "linalg_lu_solve", "linalg_cholesky_ex",
          "linalg_solve_triangular", "geqrf", "linalg_householder_product", "_linalg_svd",
          "_linalg_eigh")  # fmt: skip
FALLBACK = ("linalg_lstsq", "linalg_ldl_factor_ex", "linalg_ldl_solve")


def test_cusolver_declarations_parse():
    from cffi import FFI
    from ember_backend_cuda import cusolver

    ffi = FFI()
    ffi.cdef(cusolver.CDEF)  # what open_library declares before opening libcusolver
    for letter in ("S", "D"):
        for routine in ("getrf", "getrs", "potrf", "geqrf", "orgqr", "syevd", "gesvdj"):
            assert f"cusolverDn{letter}{routine}(" in cusolver.CDEF


def _pair(arrays):
    return [ember.tensor(a) for a in arrays], [ember.tensor(a, device="cuda") for a in arrays]


def _close(got, want, rtol=1e-10):
    for g, w in zip(got, want):
        assert g.device.type == "cuda"
        np.testing.assert_allclose(g.cpu().numpy(), w.numpy(), rtol=rtol, atol=1e-12)


def _rng():
    return np.random.default_rng(7)


@pytest.mark.usefixtures("emulated_cuda")
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the emulator")
class TestEmulated:
    def test_solver_primitives_are_native_and_the_rest_falls_back(self):
        backend, cpu = REGISTRY.backend("cuda"), REGISTRY.backend("cpu")
        for name in NATIVE:
            assert coverage.classify(OPS[name], backend, cpu) == "native", name
        for name in FALLBACK:
            assert coverage.classify(OPS[name], backend, cpu) == "cpu fallback", name

    @pytest.mark.parametrize("shape", [(3, 4, 4), (3, 5), (5, 3), (2, 0, 0)])
    def test_lu(self, shape):
        a = _rng().standard_normal(shape) + (3 * np.eye(shape[-1]) if shape[-1] == shape[-2] else 0)
        (cpu,), (gpu,) = _pair([a])
        _close(ember.linalg.lu_factor_ex(gpu), ember.linalg.lu_factor_ex(cpu))
        _close(ember.linalg.lu(gpu), ember.linalg.lu(cpu))

    def test_solves_inverse_det(self):
        rng = _rng()
        a, b = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4), rng.standard_normal((2, 4, 3))
        (A, B), (Ag, Bg) = _pair([a, b])
        _close([ember.linalg.solve(Ag, Bg), ember.linalg.inv(Ag), ember.linalg.det(Ag)],
               [ember.linalg.solve(A, B), ember.linalg.inv(A), ember.linalg.det(A)])  # fmt: skip
        _close(
            [ember.linalg.solve(Ag, Bg.mT, left=False)], [ember.linalg.solve(A, B.mT, left=False)]
        )
        LU, piv = ember.linalg.lu_factor(Ag)
        _close([ember.linalg.lu_solve(LU, piv, Bg, adjoint=True)],
               [ember.linalg.lu_solve(*ember.linalg.lu_factor(A), B, adjoint=True)])  # fmt: skip

    @pytest.mark.parametrize("upper", [False, True])
    def test_cholesky_clears_the_other_triangle(self, upper):
        x = _rng().standard_normal((3, 4, 4))
        (S,), (Sg,) = _pair([x @ x.swapaxes(-1, -2) + 4 * np.eye(4)])
        got = ember.linalg.cholesky(Sg, upper=upper)
        _close([got], [ember.linalg.cholesky(S, upper=upper)])
        other = got.cpu().numpy()
        assert not (np.tril(other, -1) if upper else np.triu(other, 1)).any()
        with pytest.raises(ember.linalg.LinAlgError, match="Batch element 1"):
            ember.linalg.cholesky(ember.tensor(np.stack([np.eye(2), -np.eye(2)]), device="cuda"))

    @pytest.mark.parametrize("row_major", [False, True])
    @pytest.mark.parametrize("left", [True, False])
    def test_solve_triangular_layouts(self, row_major, left):
        rng = _rng()
        a, b = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3), rng.standard_normal((2, 3, 2))
        b = b if left else b.swapaxes(-1, -2)
        (A, B), (Ag, Bg) = _pair([a, b])
        Ag = Ag.contiguous() if row_major else Ag.mT.contiguous().mT
        for upper, unit in ((True, False), (False, True)):
            _close([ember.linalg.solve_triangular(Ag, Bg, upper=upper, left=left,
                                                  unitriangular=unit)],
                   [ember.linalg.solve_triangular(A, B, upper=upper, left=left,
                                                  unitriangular=unit)])  # fmt: skip

    def test_empty_problems_are_answered_by_the_glue(self):
        """cuSOLVER fails a launch of no blocks and the error surfaces in the next call (seen on
        an H200: a 0x0 inverse, then CUSOLVER_STATUS_EXECUTION_FAILED in a 3x3 one): the glue
        answers empty problems itself, as LAPACK's quick returns do (the emulator's scipy calls
        refuse empty matrices, so a call that reaches it fails here)."""
        empty = {"square": (2, 0, 0), "wide": (2, 0, 3), "tall": (2, 3, 0)}
        (Z,), (Zg,) = _pair([np.zeros(empty["square"])])
        _close(
            [ember.linalg.inv(Zg), ember.linalg.det(Zg)], [ember.linalg.inv(Z), ember.linalg.det(Z)]
        )
        _close([ember.linalg.cholesky(Zg)], [ember.linalg.cholesky(Z)])
        LU, piv = ember.linalg.lu_factor(Zg)
        _close([ember.linalg.lu_solve(LU, piv, Zg)], [Z])
        for shape in (empty["wide"], empty["tall"]):
            (A,), (Ag,) = _pair([np.zeros(shape)])
            _close(ember.linalg.qr(Ag, mode="complete"), ember.linalg.qr(A, mode="complete"))
        rng = _rng()
        (A, T), (Ag, Tg) = _pair([rng.standard_normal((2, 4, 3)), np.zeros((2, 0))])
        _close([ember.linalg.householder_product(Ag, Tg)], [ember.linalg.householder_product(A, T)])
        a = rng.standard_normal((3, 3)) + 3 * np.eye(3)  # the solver still answers afterwards
        (A,), (Ag,) = _pair([a])
        _close([ember.linalg.inv(Ag)], [ember.linalg.inv(A)])

    @pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5), (4, 4)])
    def test_qr_svd_eigh(self, shape):
        a = _rng().standard_normal(shape)
        (A,), (Ag,) = _pair([a])
        for mode in ("reduced", "complete", "r"):
            _close(ember.linalg.qr(Ag, mode=mode), ember.linalg.qr(A, mode=mode))
        for full in (False, True):
            U, S, Vh = ember.linalg.svd(Ag, full_matrices=full)
            k = S.shape[-1]
            rebuilt = (U[..., :k] * S.unsqueeze(-2)) @ Vh[..., :k, :]
            _close([S, rebuilt], [ember.linalg.svdvals(A), A])
            assert U.shape == ember.linalg.svd(A, full_matrices=full).U.shape
        sym = a[..., :3, :3] + a[..., :3, :3].swapaxes(-1, -2)
        (S,), (Sg,) = _pair([sym])
        w, V = ember.linalg.eigh(Sg)
        _close([w, (V * w.unsqueeze(-2)) @ V.mT], [ember.linalg.eigvalsh(S), S])

    def test_gradients_and_fallbacks_on_cuda(self):
        rng = _rng()
        a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
        A = ember.tensor(a, device="cuda", requires_grad=True)
        ember.linalg.det(A).backward()
        np.testing.assert_allclose(A.grad.cpu().numpy(), np.linalg.det(a) * np.linalg.inv(a).T)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the CPU fallback's PerformanceWarning
            x = ember.linalg.lstsq(A, ember.ones(3, 1, dtype=A.dtype, device="cuda")).solution
        assert x.device.type == "cuda"
        np.testing.assert_allclose(x.detach().cpu().numpy(), np.linalg.solve(a, np.ones((3, 1))))
