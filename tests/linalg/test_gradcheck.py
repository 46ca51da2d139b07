"""Gradients of ember.linalg by finite differences in float64 (gradcheck), and their own
gradients (gradgradcheck): the formulas are ember ops, so they differentiate again."""

from __future__ import annotations

import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

from .cases import CASES

GRADIENT_CASES = [c for c in CASES if c.grad]


def _function(case):
    def fn(*tensors):
        out = case.fn(ember, *tensors)
        flat = []
        stack = [out]
        while stack:  # outputs in order, floating ones only
            item = stack.pop(0)
            if isinstance(item, (tuple, list)):
                stack[:0] = list(item)
            elif item.dtype.is_floating_point:
                flat.append(item)
        return tuple(flat)

    return fn


def _leaves(case, rng):
    return [ember.tensor(a, dtype=ember.float64).requires_grad_() for a in case.inputs(rng)]


@pytest.mark.parametrize("case", GRADIENT_CASES, ids=repr)
def test_gradcheck(case, rng):
    assert gradcheck(_function(case), _leaves(case, rng), eps=1e-6, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("case", [c for c in GRADIENT_CASES if c.gradgrad], ids=repr)
def test_gradgradcheck(case, rng):
    assert gradgradcheck(_function(case), _leaves(case, rng), eps=1e-6, atol=1e-5, rtol=1e-3)
