"""Gradients of complex inputs: PyTorch's convention (the conjugate Wirtinger derivative),
checked by ember's gradcheck through real views (finite differences in float64), and against
torch's own gradients for the same loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck


def _values(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.3, 1.5, shape) * np.exp(1j * rng.uniform(-2.5, 2.5, shape))


FUNCTIONS = {
    "add": lambda T, a, b: a + b * 2,  # noqa: N803
    "sub": lambda T, a, b: a - b,  # noqa: N803
    "mul": lambda T, a, b: a * b,  # noqa: N803
    "div": lambda T, a, b: a / b,  # noqa: N803
    "pow_scalar": lambda T, a, b: a**3 + a ** (0.5 + 1j),  # noqa: N803
    "pow_tensor": lambda T, a, b: a**b,  # noqa: N803
    "neg_exp_log": lambda T, a, b: -T.exp(a) + T.log(b),  # noqa: N803
    "sqrt_rsqrt": lambda T, a, b: T.sqrt(a) * T.rsqrt(b),  # noqa: N803
    "reciprocal_square": lambda T, a, b: T.reciprocal(a) + T.square(b),  # noqa: N803
    "trig": lambda T, a, b: T.sin(a) * T.cos(b) + T.tan(a * 0.3),  # noqa: N803
    "hyperbolic": lambda T, a, b: T.sinh(a) + T.cosh(b) * T.tanh(a),  # noqa: N803
    "sigmoid": lambda T, a, b: T.sigmoid(a * b),  # noqa: N803
    "abs": lambda T, a, b: T.abs(a) * b,  # noqa: N803
    "angle": lambda T, a, b: T.angle(a) + T.abs(b),  # noqa: N803
    "sum_mean": lambda T, a, b: a.sum(0) + b.mean(1),  # noqa: N803
    "prod": lambda T, a, b: a.prod(1) + b.prod(),  # noqa: N803
    "mm": lambda T, a, b: T.mm(a, b),  # noqa: N803
    "bmm": lambda T, a, b: T.bmm(a[None], b.mT[None]),  # noqa: N803
    "matmul": lambda T, a, b: a @ b.mT @ a,  # noqa: N803
    "conj": lambda T, a, b: a.conj() * b,  # noqa: N803
    "conj_physical": lambda T, a, b: T.conj_physical(a * b),  # noqa: N803
    "real_imag": lambda T, a, b: a.real * b.imag + a,  # noqa: N803
    "view_as_real": lambda T, a, b: T.view_as_real(a * b),  # noqa: N803
    "view_as_complex": lambda T, a, b: T.view_as_complex(T.view_as_real(a) * 2) * b,  # noqa: N803
    "polar": lambda T, a, b: T.polar(a.abs(), b.angle()),  # noqa: N803
    "complex": lambda T, a, b: T.complex(a.real, b.imag) * a,  # noqa: N803
    "real_with_complex": lambda T, a, b: a.real * b,  # noqa: N803
    "sgn": lambda T, a, b: T.sgn(a) * b,  # noqa: N803
    "eigvals": lambda T, a, b: T.linalg.eigvals(a) * b[0],  # noqa: N803
    # a loss of the eigenvectors' moduli: independent of their phases, so it has a gradient
    "eig": lambda T, a, b: T.linalg.eig(a)[1].abs() * b + T.linalg.eig(a)[0],  # noqa: N803
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_gradcheck(name):
    fn = FUNCTIONS[name]
    a = ember.tensor(_values((2, 2), 0), dtype=ember.complex128, requires_grad=True)
    b = ember.tensor(_values((2, 2), 1), dtype=ember.complex128, requires_grad=True)
    assert gradcheck(lambda x, y: fn(ember, x, y), (a, b))


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_gradients_match_torch(name):
    fn = FUNCTIONS[name]
    grads = []
    for T in (ember, torch):
        a = T.tensor(_values((2, 2), 2), dtype=T.complex128, requires_grad=True)
        b = T.tensor(_values((2, 2), 3), dtype=T.complex128, requires_grad=True)
        out = fn(T, a, b)
        weight = T.tensor(_values(tuple(out.shape), 4), dtype=T.complex128)
        loss = (out * weight).real.sum() if out.dtype.is_complex else (out * weight.real).sum()
        got = T.autograd.grad(loss, (a, b), allow_unused=True)
        grads.append([None if g is None else g.detach().resolve_conj().numpy() for g in got])
    for mine, theirs in zip(*grads):
        if theirs is None:
            assert mine is None or np.allclose(mine, 0)
        else:
            np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-12)


def test_real_input_gets_a_real_gradient():
    x = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    z = ember.tensor([1 + 1j, 2 - 1j], dtype=ember.complex128)
    (x * z).abs().sum().backward()
    tx = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    (tx * torch.tensor([1 + 1j, 2 - 1j])).abs().sum().backward()
    assert x.grad.dtype is ember.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_complex_leaves_require_grad():
    z = ember.zeros(2, dtype=ember.complex64, requires_grad=True)
    assert z.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.zeros(2, dtype=ember.int64).requires_grad_()


@pytest.mark.parametrize("name", ["mul", "trig", "abs", "mm"])
def test_second_derivatives(name):
    fn = FUNCTIONS[name]
    a = ember.tensor(_values((2, 2), 5), dtype=ember.complex128, requires_grad=True)
    b = ember.tensor(_values((2, 2), 6), dtype=ember.complex128, requires_grad=True)
    assert gradgradcheck(lambda x, y: fn(ember, x, y), (a, b))


class _WrongConvention(ember.autograd.Function):
    """z * c with the gradient grad * c: the holomorphic derivative, not its conjugate."""

    @staticmethod
    def forward(ctx, z):
        return z * (2 + 1j)

    @staticmethod
    def backward(ctx, grad):
        return grad * (2 + 1j)


def test_gradcheck_catches_a_wrong_complex_convention():
    z = ember.tensor([1 + 2j, -1j], dtype=ember.complex128, requires_grad=True)
    assert not gradcheck(_WrongConvention.apply, (z,), raise_exception=False)
