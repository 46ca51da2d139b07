"""gradcheck's and gradgradcheck's optional checks as PyTorch's flags (check_forward_ad,
check_batched_grad, check_batched_forward_grad, check_undefined_grad, check_backward_ad,
gradgradcheck's check_fwd_over_rev / gen_non_contig_grad_outputs), and autograd.grad's
is_grads_batched, each against torch on the same function, with formulas wrong on purpose so
that every check is seen to fail."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import GradcheckError, gradcheck, gradgradcheck


def _x(lib, n=4):
    values = np.random.default_rng(3).standard_normal(n)
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def _doubling(lib, backward, jvp=lambda t: t * 2):
    """``a * 2`` as a custom Function with the given backward and jvp (``g * 2`` and
    ``t * 2`` are right; anything else is a formula wrong on purpose)."""

    class Doubling(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return backward(g)

        @staticmethod
        def jvp(ctx, t):
            return jvp(t)

    return Doubling.apply


def _wrong_jvp(lib):
    return _doubling(lib, lambda g: g * 2, lambda t: t * 3)


def _wrong_backward(lib):
    return _doubling(lib, lambda g: g * 3)


@pytest.mark.parametrize("which", ["jvp", "backward"])
@pytest.mark.parametrize("forward, backward", [(True, True), (False, True), (True, False)])
def test_forward_and_backward_checks_catch_what_torch_catches(which, forward, backward):
    def run(lib, check):
        fn = (_wrong_jvp if which == "jvp" else _wrong_backward)(lib)
        return check(
            fn,
            (_x(lib),),
            check_forward_ad=forward,
            check_backward_ad=backward,
            check_undefined_grad=False,
            raise_exception=False,
        )

    ours = run(ember, gradcheck)
    assert ours == run(torch, torch.autograd.gradcheck)
    wrong_one_checked = forward if which == "jvp" else backward
    assert ours is (not wrong_one_checked)


def test_the_forward_mode_mismatch_is_named():
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch"):
        gradcheck(_wrong_jvp(ember), (_x(ember),), check_forward_ad=True)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: (x * x).sin(),
        lambda x: x.cumsum(0) * x.exp(),
        lambda x: x.reshape(2, 2) @ x.reshape(2, 2),
    ],
    ids=["sin-square", "cumsum-exp", "matmul"],
)
def test_every_check_passes_on_right_formulas(fn):
    flags = dict(check_forward_ad=True, check_batched_grad=True, check_batched_forward_grad=True)
    assert gradcheck(fn, (_x(ember),), **flags)
    assert torch.autograd.gradcheck(fn, (_x(torch),), **flags)
    assert gradgradcheck(
        fn, (_x(ember),), check_fwd_over_rev=True, gen_non_contig_grad_outputs=True
    )


def test_undefined_grad_check_catches_a_formula_that_ignores_its_gradient():
    # right for every one-hot gradient, nonzero for a zero (undefined) one
    constant = _doubling(ember, lambda g: g * 2 + (g.abs().sum() == 0).to(g.dtype))
    with pytest.raises(GradcheckError, match="zero"):
        gradcheck(constant, (_x(ember),), check_undefined_grad=True)


def test_unknown_arguments_are_refused_as_python_refuses_them():
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        gradcheck(lambda x: x, (_x(ember),), bogus=True)
    with pytest.raises(NotImplementedError, match="sparse"):
        gradcheck(lambda x: x, (_x(ember),), masked=True)


def test_is_grads_batched_matches_torch():
    results = []
    for lib in (ember, torch):
        x = _x(lib, 3)
        unused = lib.zeros(2, dtype=lib.float64, requires_grad=True)
        y = (x * x).sin()
        batch = lib.tensor(np.random.default_rng(4).standard_normal((5, 3)))
        grads = lib.autograd.grad(y, (x, unused), batch, is_grads_batched=True, allow_unused=True)
        assert grads[1] is None
        results.append(grads[0].detach().numpy())
    assert results[0].shape == (5, 3)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)
