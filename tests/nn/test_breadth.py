"""Every row of breadth_cases.py against PyTorch: same weights, same inputs, same upstream
gradient; outputs, input gradients and parameter gradients agree, in float32 on every device
and in float64 (tight tolerances, where formula slips show) on the CPU."""

from __future__ import annotations

import pytest

import ember

from .breadth_cases import FUNCTIONS, MODULES, inputs_for
from .oracle import check_module, pair

torch = pytest.importorskip("torch")


def _module_pair(name, args, kwargs, device, dtype):
    ours, theirs = pair(name, *args, device=device, dtype=dtype, **kwargs)
    if name in EVAL:  # random in training: their deterministic evaluation form is compared
        ours.eval()
        theirs.eval()
    return ours, theirs


EVAL = {"RReLU"}


@pytest.mark.parametrize("name, args, kwargs, inputs, forward, f64", MODULES)
def test_module(device, rng, name, args, kwargs, inputs, forward, f64):
    ours, theirs = _module_pair(name, args, kwargs, device, "float32")
    check_module(ours, theirs, inputs_for(inputs, rng, "float32"), device, forward)


@pytest.mark.parametrize("name, args, kwargs, inputs, forward, f64", MODULES)
def test_module_float64(rng, name, args, kwargs, inputs, forward, f64):
    if not f64:
        pytest.skip("float32 only")
    ours, theirs = _module_pair(name, args, kwargs, "cpu", "float64")
    values = inputs_for(inputs, rng, "float64")
    check_module(ours, theirs, values, "cpu", forward, dtype="float64")


@pytest.mark.parametrize("name, args, kwargs, inputs, forward, f64", MODULES)
def test_module_repr(name, args, kwargs, inputs, forward, f64):
    torch.manual_seed(0)
    assert repr(getattr(ember.nn, name)(*args, **kwargs)) == repr(
        getattr(torch.nn, name)(*args, **kwargs)
    )


def _functions(name, kwargs):
    def ours(*args):
        return getattr(ember.nn.functional, name)(*args, **kwargs)

    def theirs(*args):
        return getattr(torch.nn.functional, name)(*args, **kwargs)

    return ours, theirs


@pytest.mark.parametrize("name, kwargs, inputs, f64", FUNCTIONS)
def test_function(device, rng, name, kwargs, inputs, f64):
    ours, theirs = _functions(name, kwargs)
    check_module(ours, theirs, inputs_for(inputs, rng, "float32"), device)


@pytest.mark.parametrize("name, kwargs, inputs, f64", FUNCTIONS)
def test_function_float64(rng, name, kwargs, inputs, f64):
    if not f64:
        pytest.skip("float32 only")
    ours, theirs = _functions(name, kwargs)
    check_module(ours, theirs, inputs_for(inputs, rng, "float64"), "cpu", dtype="float64")
