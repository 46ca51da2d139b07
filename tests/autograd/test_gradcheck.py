"""gradcheck and gradgradcheck themselves: they pass right gradients, catch wrong ones, and treat
outputs as PyTorch does (indices ignored, outputs without grad must not depend on the inputs)."""

from __future__ import annotations

import pytest

import ember
from ember.autograd import Function, GradcheckError, gradcheck, gradgradcheck


def _x(device, n=5):
    return ember.linspace(-1.0, 2.0, n, dtype=ember.float64, device=device).requires_grad_()


class WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * g  # should be 2 * x * g


class NoisyIdentity(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g + 1e-3 * ember.rand(g.shape, dtype=g.dtype, device=g.device)


def test_right_gradients_pass(device):
    assert gradcheck(lambda x: (x.sin() * x).sum(0), (_x(device),))
    assert gradgradcheck(lambda x: x.exp() * x, (_x(device, 3),))


def test_wrong_gradient_is_caught(device):
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ):
        gradcheck(WrongSquare.apply, (_x(device),))
    assert gradcheck(WrongSquare.apply, (_x(device),), raise_exception=False) is False


def test_wrong_second_derivative_is_caught(device):
    with pytest.raises(GradcheckError):
        gradgradcheck(lambda x: WrongSquare.apply(x) * x, (_x(device, 3),))


def test_nondeterministic_backward_is_caught(device):
    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(NoisyIdentity.apply, (_x(device),), atol=1e-2)


def test_integer_outputs_are_ignored(device):
    """sort returns (values, indices): only the values have a Jacobian."""
    assert gradcheck(lambda x: ember.sort(x.flip(0)), (_x(device),))
    assert gradgradcheck(lambda x: ember.sort(x * x), (_x(device, 3),))


def test_outputs_without_grad_must_be_constant(device):
    assert gradcheck(
        lambda x: (x * 2, ember.ones(3, dtype=ember.float64, device=device)), (_x(device),)
    )
    with pytest.raises(GradcheckError, match="output 0 does not require grad"):
        gradcheck(lambda x: (x.detach() * 2,), (_x(device),))


def test_second_derivative_of_piecewise_constant_gradients(device):
    """floor's gradient is a constant zero that requires no grad: gradgradcheck accepts it."""
    assert gradgradcheck(lambda x: ember.floor(x * 3.3), (_x(device, 3),))
