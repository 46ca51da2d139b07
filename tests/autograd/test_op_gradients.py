"""Every differentiable op of the table (in-place variants too), on cpu and, for a fixed share of
the ops, on every other device: gradcheck in float64 against central differences on the op
suite's samples (broadcast, non-contiguous and negative-stride layouts, built from leaves
through differentiable views), and gradgradcheck on the smallest few, since every formula is
written in ember ops and so differentiable again. gradcheck: whole Jacobians on cpu (fast mode
for rows that are themselves gradients: ``_mode``), PyTorch's fast mode on the other devices;
gradgradcheck: fast mode everywhere."""

from __future__ import annotations

import functools

import pytest

from ember.autograd import gradcheck, gradgradcheck

from ..conftest import device_op_params, full_device
from . import cases as C


def _check(case, check) -> None:
    try:
        check(case.fn, case.leaves)
    except Exception as exc:
        exc.add_note(f"case: {case!r}")
        raise


# gradcheck checks every op on the full device (cpu) and the share of the ops (tests/conftest.py)
# on each other device: their forward kernels meet these layouts in tests/ops/test_ops.py, and
# the OpInfo suite compares every record's input gradients with PyTorch's on xpu and cuda. The
# backward formulas are ember ops, the same on every device. Every op on xpu and ref took 560
# of CI's ~8000 worker-seconds (2026-11-28); gradgradcheck likewise.
DEVICE_OPS = device_op_params(C.DIFFERENTIABLE, str, lambda device, full: device == full)


def _mode(device: str, name: str) -> dict:
    """Whole Jacobians on the full device; elsewhere PyTorch's fast mode (v^T J u for random
    u, v: two evaluations per input instead of two per input element, each a round of kernel
    launches and a read back on xpu), which a wrong kernel or formula still fails. Whole
    Jacobians on xpu and ref cost 470 of 4430 worker-seconds of a cold run (2026-11-28).

    A row that is itself a gradient (``grid_sampler_3d_backward``) is fast everywhere: its
    derivative is its forward op's second derivative, which test_gradgradcheck checks in fast
    mode too, and each column of a whole Jacobian is a double backward (grid_sampler_2d's and
    3d's took 19 and 27 s of a run on cpu, 2026-11-29)."""
    return {"fast_mode": device != full_device() or name.endswith("_backward")}


@pytest.mark.parametrize("device, name", DEVICE_OPS)
def test_gradcheck(name, device, rng):
    found = C.cases(name, device, rng)
    assert any(c.size for c in found), (
        f"{name}: no non-empty sample suits a gradcheck (tests/autograd/cases.py says which)"
    )
    for case in found:
        _check(case, functools.partial(gradcheck, **_mode(device, name)))


# Second derivatives in fast mode on cpu too (v^T H u for random u, v, as PyTorch's own OpInfo
# gradgrad tests run by default): whole second-order Jacobians on cpu took 100 of a cold CI
# run's 3925 worker-seconds (2026-11-29), fast mode a third of that; the first-order check
# above keeps whole Jacobians on cpu.
@pytest.mark.parametrize("device, name", DEVICE_OPS)
def test_gradgradcheck(name, device, rng):
    chosen = C.gradgrad_cases(C.cases(name, device, rng))
    assert chosen, f"{name}: no sample suits a gradgradcheck"
    for case in chosen:
        _check(case, functools.partial(gradgradcheck, fast_mode=True))
