"""ember.linalg on devices without solver kernels: the LAPACK primitives run through the declared
CPU fallback (counted, warned once), and the results come back on the device."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.dispatcher import coverage
from ember.dispatcher.devices import REGISTRY
from ember.dispatcher.optable import OPS, lapack
from ember.dispatcher.registry import FALLBACK_COUNTS

PRIMITIVES = sorted(OPS[row.schema.partition("(")[0]].name for row in lapack.ROWS)


def _without_solver(device):
    backend = REGISTRY.backend(device)
    if device == "cpu" or any(name in backend.kernels for name in PRIMITIVES):
        pytest.skip(f"{device} has its own solver kernels")
    if not backend.fallback:
        pytest.skip(f"CPU fallback is off for {device}")
    return backend


def test_primitives_are_declared_cpu_fallbacks(device):
    backend = _without_solver(device)
    cpu = REGISTRY.backend("cpu")
    kinds = {name: coverage.classify(OPS[name], backend, cpu) for name in PRIMITIVES}
    assert set(kinds.values()) == {"cpu fallback"}, kinds


def test_solve_runs_on_the_cpu_and_comes_back(device, rng):
    _without_solver(device)
    a = rng.standard_normal((3, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((3, 4, 2))
    before = FALLBACK_COUNTS["linalg_lu_factor_ex"], FALLBACK_COUNTS["linalg_lu_solve"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-per-op PerformanceWarning
        x = ember.linalg.solve(ember.tensor(a, device=device), ember.tensor(b, device=device))
    assert x.device.type == device
    np.testing.assert_allclose(x.cpu().numpy(), np.linalg.solve(a, b), rtol=1e-5, atol=1e-6)
    after = FALLBACK_COUNTS["linalg_lu_factor_ex"], FALLBACK_COUNTS["linalg_lu_solve"]
    assert after == (before[0] + 1, before[1] + 1)


def test_gradient_on_the_device(device, rng):
    _without_solver(device)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    A = ember.tensor(a, dtype=ember.float64, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.linalg.det(A).backward()
    assert A.grad.device.type == device
    want = np.linalg.det(a) * np.linalg.inv(a).T
    np.testing.assert_allclose(A.grad.cpu().numpy(), want, rtol=1e-9)
