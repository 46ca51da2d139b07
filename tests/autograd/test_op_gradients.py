"""Every differentiable op of the table (in-place variants too), on every device: gradcheck in
float64 against central differences on the op suite's samples (broadcast, non-contiguous and
negative-stride layouts, built from leaves through differentiable views), and gradgradcheck on
the smallest few, since every formula is written in ember ops and so differentiable again."""

from __future__ import annotations

import zlib

import pytest

from ember.autograd import gradcheck, gradgradcheck

from ..conftest import device_params
from . import cases as C


def _check(case, check) -> None:
    try:
        check(case.fn, case.leaves)
    except Exception as exc:
        exc.add_note(f"case: {case!r}")
        raise


# Second derivatives are ember ops, the same formulas on every device, and gradcheck below runs
# every device's first-order kernels. So cpu (or, when cpu is not tested, the first usable
# device: cuda in the GPU acceptance run) checks every op, and each other device a fixed third
# of them, spread by name hash: every op on xpu and ref took 200 of CI's 2470 worker-seconds.
OTHER_DEVICE_SHARE = 3


def _device_op_params(every_op) -> list:
    """(device, op) pairs: every op where ``every_op(device, full)`` holds (``full`` being the
    device that checks them all), elsewhere the third of the ops picked by name hash."""
    devices = device_params()
    usable = [device.values[0] for device in devices if not device.marks]
    full = "cpu" if "cpu" in usable else (usable or ["cpu"])[0]
    params = []
    for device in devices:
        value = device.values[0]
        for name in C.DIFFERENTIABLE:
            if every_op(value, full) or zlib.crc32(name.encode()) % OTHER_DEVICE_SHARE == 0:
                params.append(pytest.param(value, name, marks=device.marks, id=f"{value}-{name}"))
    return params


# The example plugin's `ref` device runs nearly every op through the CPU fallback (cpu's
# kernels behind one more copy each way), so first-order checks there take the same third of
# the ops as gradgradcheck's other devices: every op on ref took 158 of CI's worker-seconds.
FALLBACK_DEVICES = frozenset({"ref"})


def _gradcheck_params() -> list:
    return _device_op_params(lambda device, full: device not in FALLBACK_DEVICES)


@pytest.mark.parametrize("device, name", _gradcheck_params())
def test_gradcheck(name, device, rng):
    found = C.cases(name, device, rng)
    assert any(c.size for c in found), (
        f"{name}: no non-empty sample suits a gradcheck (tests/autograd/cases.py says which)"
    )
    for case in found:
        _check(case, gradcheck)


@pytest.mark.parametrize("device, name", _device_op_params(lambda device, full: device == full))
def test_gradgradcheck(name, device, rng):
    chosen = C.gradgrad_cases(C.cases(name, device, rng))
    assert chosen, f"{name}: no sample suits a gradgradcheck"
    for case in chosen:
        _check(case, gradgradcheck)
