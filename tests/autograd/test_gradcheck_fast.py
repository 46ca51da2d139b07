"""gradcheck's and gradgradcheck's fast mode against PyTorch's on the same functions: right
formulas pass, formulas wrong on purpose (backward, forward mode, second derivative) fail in
both, and an output without grad that depends on the inputs fails as in ember's slow mode. The
failure names the pair and shows the slow check's Jacobians; the work is two evaluations per
input, not per input element."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import GradcheckError, gradcheck, gradgradcheck

from .test_gradcheck_modes import _doubling


def _x(lib, n=6, seed=3):
    values = np.random.default_rng(seed).standard_normal(n)
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def _scaled(lib, backward_factor=2.0, jvp_factor=2.0):
    """``a * 2`` whose backward and jvp multiply by the given factors (2 is right)."""
    return _doubling(lib, lambda g: g * backward_factor, lambda t: t * jvp_factor)


def _swapped(lib):
    """``x * w`` whose backward swaps the two gradients: wrong wherever x != w."""

    class Swapped(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * x, g * w

    return Swapped.apply


def _both(lib, check, fn, inputs, **flags):
    return check(fn(lib), inputs(lib), fast_mode=True, raise_exception=False, **flags)


CASES = {
    "right": (lambda lib: lambda x: (x * x).sin().cumsum(0), lambda lib: (_x(lib),), True),
    "matmul": (
        lambda lib: lambda a, b: a.reshape(2, 3) @ b.reshape(3, 2),
        lambda lib: (_x(lib), _x(lib, seed=4)),
        True,
    ),
    "wrong backward": (lambda lib: _scaled(lib, 3.0), lambda lib: (_x(lib),), False),
    "swapped gradients": (_swapped, lambda lib: (_x(lib), _x(lib, seed=5)), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_mode_agrees_with_torch(case):
    fn, inputs, right = CASES[case]
    ours = _both(ember, gradcheck, fn, inputs)
    assert ours == _both(torch, torch.autograd.gradcheck, fn, inputs)
    assert ours is right


@pytest.mark.parametrize("backward, forward", [(1.0, 2.0), (2.0, 3.0)], ids=["bwd", "jvp"])
def test_fast_forward_mode_catches_what_torch_catches(backward, forward):
    def check(lib, gradcheck_fn):
        return gradcheck_fn(
            _scaled(lib, backward, forward),
            (_x(lib),),
            fast_mode=True,
            check_forward_ad=forward != 2.0,
            check_backward_ad=backward != 2.0,
            check_undefined_grad=False,
            raise_exception=False,
        )

    assert check(ember, gradcheck) is False
    assert check(torch, torch.autograd.gradcheck) is False


def test_fast_gradgradcheck_catches_a_wrong_second_derivative():
    class WrongSecond(ember.autograd.Function):
        """x**3 whose backward is right once (3 x^2 g) but built from a detached x: its own
        derivative is missing, so gradgradcheck must fail."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x.detach() * x.detach() * g

    assert gradgradcheck(lambda x: x * x * x, (_x(ember),), fast_mode=True)
    assert gradcheck(WrongSecond.apply, (_x(ember),), fast_mode=True)
    assert not gradgradcheck(WrongSecond.apply, (_x(ember),), fast_mode=True, raise_exception=False)


def test_the_failure_names_the_pair_and_shows_the_slow_jacobians():
    with pytest.raises(GradcheckError) as caught:
        gradcheck(_swapped(ember), (_x(ember), _x(ember, seed=5)), fast_mode=True)
    text = str(caught.value)
    assert "fast mode: v^T J u for output 0 with respect to input 0" in text
    assert "slow mode: Jacobian mismatch for output 0 with respect to input 0" in text


def test_an_output_without_grad_must_not_depend_on_the_inputs():
    """ember's own rule, in both modes (PyTorch checks such outputs only when no output
    requires grad): a detached result that depends on the inputs hides a missing formula."""

    def leaky(x):
        return x * 2, (x * 3).detach()

    assert not gradcheck(leaky, (_x(ember),), raise_exception=False)
    assert not gradcheck(leaky, (_x(ember),), fast_mode=True, raise_exception=False)
    assert gradcheck(lambda x: (x * 2, (x * 0).detach() + 1), (_x(ember),), fast_mode=True)


def test_fast_mode_evaluates_twice_per_input_not_per_element():
    calls = []

    def counted(a, b):
        calls.append(1)
        return (a * b).exp()

    n = 40
    assert gradcheck(counted, (_x(ember, n), _x(ember, n, seed=4)), fast_mode=True)
    fast = len(calls)
    calls.clear()
    assert gradcheck(counted, (_x(ember, n), _x(ember, n, seed=4)))
    assert fast <= 12 < 4 * n <= len(calls)


def test_fast_mode_leaves_the_random_stream_alone():
    ember.manual_seed(11)
    expected = ember.rand(3)
    ember.manual_seed(11)
    assert gradcheck(lambda x: x.tanh(), (_x(ember),), fast_mode=True)
    assert ember.equal(ember.rand(3), expected)


def test_complex_inputs_in_fast_mode():
    z = ember.tensor(np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j]), requires_grad=True)
    assert gradcheck(lambda z: (z * z.conj() + z.exp()).sum(), (z,), fast_mode=True)
