"""Every differentiable op of the table (in-place variants too), on every device: gradcheck in
float64 against central differences on the op suite's samples (broadcast, non-contiguous and
negative-stride layouts, built from leaves through differentiable views), and gradgradcheck on
the smallest few, since every formula is written in ember ops and so differentiable again."""

from __future__ import annotations

import pytest

from ember.autograd import gradcheck, gradgradcheck

from . import cases as C


def _check(case, check) -> None:
    try:
        check(case.fn, case.leaves)
    except Exception as exc:
        exc.add_note(f"case: {case!r}")
        raise


@pytest.mark.parametrize("name", C.DIFFERENTIABLE)
def test_gradcheck(name, device, rng):
    found = C.cases(name, device, rng)
    assert any(c.size for c in found), (
        f"{name}: no non-empty sample suits a gradcheck (tests/autograd/cases.py says which)"
    )
    for case in found:
        _check(case, gradcheck)


@pytest.mark.parametrize("name", C.DIFFERENTIABLE)
def test_gradgradcheck(name, device, rng):
    chosen = C.gradgrad_cases(C.cases(name, device, rng))
    assert chosen, f"{name}: no sample suits a gradgradcheck"
    for case in chosen:
        _check(case, gradgradcheck)
