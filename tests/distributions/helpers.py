"""Build the same distribution in ember and torch, and compare their outputs."""

from __future__ import annotations

from numbers import Number

import numpy as np
import torch

import ember
import ember.distributions as ed

from .cases import as_array


def build(case, device="cpu", requires_grad=False, **kwargs):
    """(ember distribution, torch distribution, ember params) for a Case."""
    e_params, t_params = {}, {}
    for key, value in case.params.items():
        if isinstance(value, Number):
            e_params[key] = t_params[key] = value
            continue
        array = as_array(value)
        e_params[key] = ember.tensor(array, device=device, requires_grad=requires_grad)
        t_params[key] = torch.tensor(array)
    e_dist = getattr(ed, case.name)(**e_params, **kwargs)
    t_dist = getattr(torch.distributions, case.name)(**t_params, **kwargs)
    return e_dist, t_dist, e_params


def to_numpy(x):
    if isinstance(x, ember.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def assert_close(actual, expected, rtol=1e-9, atol=1e-10):
    actual, expected = to_numpy(actual), to_numpy(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)


def torch_or_error(fn):
    """fn()'s value, or the exception type it raised (NotImplementedError for missing methods)."""
    try:
        return fn()
    except NotImplementedError as exc:
        return type(exc)
