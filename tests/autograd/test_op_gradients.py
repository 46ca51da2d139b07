"""Every differentiable op of the table (in-place variants too), on every device: gradcheck in
float64 against central differences on the op suite's samples (broadcast, non-contiguous and
negative-stride layouts, built from leaves through differentiable views), and gradgradcheck on
the smallest few, since every formula is written in ember ops and so differentiable again."""

from __future__ import annotations

import pytest

from ember.autograd import gradcheck, gradgradcheck

from ..conftest import FALLBACK_DEVICES, device_op_params
from . import cases as C


def _check(case, check) -> None:
    try:
        check(case.fn, case.leaves)
    except Exception as exc:
        exc.add_note(f"case: {case!r}")
        raise


# gradcheck runs every device's first-order kernels on every op, except on the fallback devices
# (tests/conftest.py), whose kernels are cpu's. Second derivatives are ember ops, the same
# formulas on every device, so gradgradcheck takes every op on the full device (cpu) and the
# share elsewhere: every op on xpu and ref took 200 of CI's 2470 worker-seconds.
def _gradcheck_params() -> list:
    def every_op(device, full):
        return device not in FALLBACK_DEVICES

    return device_op_params(C.DIFFERENTIABLE, str, every_op)


@pytest.mark.parametrize("device, name", _gradcheck_params())
def test_gradcheck(name, device, rng):
    found = C.cases(name, device, rng)
    assert any(c.size for c in found), (
        f"{name}: no non-empty sample suits a gradcheck (tests/autograd/cases.py says which)"
    )
    for case in found:
        _check(case, gradcheck)


@pytest.mark.parametrize(
    "device, name", device_op_params(C.DIFFERENTIABLE, str, lambda device, full: device == full)
)
def test_gradgradcheck(name, device, rng):
    chosen = C.gradgrad_cases(C.cases(name, device, rng))
    assert chosen, f"{name}: no sample suits a gradgradcheck"
    for case in chosen:
        _check(case, gradgradcheck)
