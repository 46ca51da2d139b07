"""Every row of breadth_cases.py against PyTorch: same weights, same inputs, same upstream
gradient; outputs, input gradients and parameter gradients agree, in float32 on every device
and in float64 (tight tolerances, where formula slips show) on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .breadth_cases import FUNCTIONS, MODULES, grads_for, inputs_for
from .oracle import assert_close, check_module, pair, to_ember, to_torch

torch = pytest.importorskip("torch")


def _tensor_args(args, kwargs, dtype):
    """Generated arguments (class weights...) made concrete: the same numpy array for both."""
    rng = np.random.default_rng(0)
    args = [a(rng, dtype) if callable(a) else a for a in args]
    kwargs = {k: v(rng, dtype) if callable(v) else v for k, v in kwargs.items()}
    return args, kwargs


def _module_pair(name, args, kwargs, device, dtype):
    import torch

    args, kwargs = _tensor_args(args, kwargs, dtype)
    if not any(isinstance(v, np.ndarray) for v in [*args, *kwargs.values()]):
        ours, theirs = pair(name, *args, device=device, dtype=dtype, **kwargs)
    else:  # tensors among the arguments: each framework gets its own
        ours = getattr(ember.nn, name)(
            *[to_ember(a, device) if isinstance(a, np.ndarray) else a for a in args],
            **{
                k: to_ember(v, device) if isinstance(v, np.ndarray) else v
                for k, v in kwargs.items()
            },
        )
        theirs = getattr(torch.nn, name)(
            *[to_torch(a) if isinstance(a, np.ndarray) else a for a in args],
            **{k: to_torch(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()},
        )
    if name in EVAL:  # random in training: their deterministic evaluation form is compared
        ours.eval()
        theirs.eval()
    return ours, theirs


EVAL = {"RReLU"}


@pytest.mark.parametrize("name, args, kwargs, inputs, forward, f64", MODULES)
def test_module(device, rng, name, args, kwargs, inputs, forward, f64):
    ours, theirs = _module_pair(name, args, kwargs, device, "float32")
    values = inputs_for(inputs, rng, "float32")
    check_module(ours, theirs, values, device, forward, grad_inputs=grads_for(inputs))
    for key, value in theirs.state_dict().items():  # running statistics, counters
        assert_close(ours.state_dict()[key], value, key)


@pytest.mark.parametrize("name, args, kwargs, inputs, forward, f64", MODULES)
def test_module_float64(rng, name, args, kwargs, inputs, forward, f64):
    if not f64:
        pytest.skip("float32 only")
    ours, theirs = _module_pair(name, args, kwargs, "cpu", "float64")
    values = inputs_for(inputs, rng, "float64")
    check_module(
        ours, theirs, values, "cpu", forward, dtype="float64", grad_inputs=grads_for(inputs)
    )


@pytest.mark.parametrize("name, args, kwargs, inputs, forward, f64", MODULES)
def test_module_repr(name, args, kwargs, inputs, forward, f64):
    ours, theirs = _module_pair(name, args, kwargs, "cpu", "float32")
    assert repr(ours) == repr(theirs)


def _functions(name, kwargs, device, dtype):
    _, kwargs = _tensor_args((), kwargs, dtype)
    ours_kwargs = {
        k: to_ember(v, device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    theirs_kwargs = {k: to_torch(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}

    def ours(*args):
        return getattr(ember.nn.functional, name)(*args, **ours_kwargs)

    def theirs(*args):
        return getattr(torch.nn.functional, name)(*args, **theirs_kwargs)

    return ours, theirs


@pytest.mark.parametrize("name, kwargs, inputs, f64", FUNCTIONS)
def test_function(device, rng, name, kwargs, inputs, f64):
    ours, theirs = _functions(name, kwargs, device, "float32")
    values = inputs_for(inputs, rng, "float32")
    check_module(ours, theirs, values, device, grad_inputs=grads_for(inputs))


@pytest.mark.parametrize("name, kwargs, inputs, f64", FUNCTIONS)
def test_function_float64(rng, name, kwargs, inputs, f64):
    if not f64:
        pytest.skip("float32 only")
    ours, theirs = _functions(name, kwargs, "cpu", "float64")
    values = inputs_for(inputs, rng, "float64")
    check_module(ours, theirs, values, "cpu", dtype="float64", grad_inputs=grads_for(inputs))
