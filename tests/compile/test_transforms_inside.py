"""Function transforms and autograd calls inside a compiled function (compiler/observer.py's
breaks, compiler/pending.py's flushes): vmap's and forward AD's layers run their function out
of the capture's sight, and autograd.grad walks a segment's outputs below the properties, so
before these every case here returned the first call's numbers or raised from a replay on."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.compiler.exc import Unsupported

F = ember.func


def _sum_sin(y):
    return (y.sin() * y).sum()


CASES = {
    "vmap": (lambda x: F.vmap(lambda r: r.sin() * 2)(x) + 1, lambda x: x.sin() * 2 + 1),
    "vmap-closure": (
        lambda x: ember.vmap(lambda r: (r * x.sum()).relu())(x),
        lambda x: (x * x.sum()).relu(),
    ),
    "grad": (lambda x: F.grad(_sum_sin)(x), lambda x: x.cos() * x + x.sin()),
    "jacrev": (lambda x: F.jacrev(lambda y: y.sin())(x), lambda x: ember.diag(x.cos())),
    "jacfwd": (lambda x: F.jacfwd(lambda y: y.sin())(x), lambda x: ember.diag(x.cos())),
    "jvp": (
        lambda x: F.jvp(lambda y: y.sin(), (x,), (ember.ones_like(x),))[1],
        lambda x: x.cos(),
    ),
    "vjp": (lambda x: F.vjp(lambda y: y.sin(), x)[1](ember.ones_like(x))[0], lambda x: x.cos()),
    "hessian": (lambda x: F.hessian(lambda y: (y**3).sum())(x), lambda x: ember.diag(6 * x)),
}


def _dual_level(x):
    forward_ad = ember.autograd.forward_ad
    y = x * 3
    with forward_ad.dual_level():
        out = forward_ad.make_dual(y, ember.ones_like(x)).sin() * 2
        tangent = forward_ad.unpack_dual(out).tangent
    return tangent + y


CASES["dual_level"] = (_dual_level, lambda x: 2 * (3 * x).cos() + 3 * x)


@pytest.mark.parametrize("name", list(CASES))
def test_transforms_give_each_calls_numbers(name):
    fn, want = CASES[name]
    compiled = ember.compile(fn)
    rng = np.random.default_rng(0)
    for _ in range(5):  # the capture, a recording, then replays
        x = ember.tensor(rng.standard_normal(4), dtype=ember.float64)
        got = compiled(x)
        assert not got.requires_grad
        np.testing.assert_allclose(got.numpy(), want(x).numpy(), rtol=1e-10, atol=1e-12)


def test_fullgraph_names_the_transform():
    with pytest.raises(Unsupported, match="Unsupported function transform"):
        ember.compile(lambda x: F.vmap(lambda r: r * 2)(x), fullgraph=True)(ember.ones(3))


def _grad_of_input(x):
    y = (x**3).sum()
    (gx,) = ember.autograd.grad(y, x)
    return gx


def _grad_of_a_new_leaf(x):
    x = x.detach().requires_grad_()
    y = (x**3).sum()
    return ember.autograd.grad(y, x)[0]


def _grad_after_setting_the_flag(x):
    x = x * 1
    x.requires_grad = True
    return ember.autograd.grad((x**3).sum(), x)[0]


def _backward_function(x):
    ember.autograd.backward([(x**3).sum()])
    return x.grad


@pytest.mark.parametrize(
    "fn, input_requires_grad",
    [
        (_grad_of_input, True),
        (_grad_of_a_new_leaf, False),
        (_grad_after_setting_the_flag, False),
        (_backward_function, True),
    ],
    ids=["grad-of-input", "grad-of-new-leaf", "requires_grad-set", "autograd.backward"],
)
def test_autograd_calls_inside_see_the_segments_history(fn, input_requires_grad):
    compiled = ember.compile(fn)
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = ember.tensor(rng.standard_normal(4), dtype=ember.float64)
        x.requires_grad_(input_requires_grad)
        got = compiled(x)
        np.testing.assert_allclose(got.detach().numpy(), 3 * x.detach().numpy() ** 2, rtol=1e-12)
