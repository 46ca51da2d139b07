"""Backward formulas at the points the generated gradchecks keep away from (kinks, zeros, ties,
empty and 0-dim inputs, Python scalars in tensor positions), against PyTorch's conventions."""

from __future__ import annotations

import numpy as np
import pytest

from .oracle import compare


def scalar(lib, value, like):
    """``value`` as ember takes it (a Python scalar), or as a tensor where torch wants one."""
    return value if lib.__name__ == "ember" else lib.full_like(like, value)


A = np.array([[-1.5, 0.0, 0.5, 2.0], [3.0, -0.25, 1.0, 0.0]])
B = np.array([[0.5, 0.0, -1.0, 2.0], [1.0, 2.0, 0.0, -3.0]])


def test_clamp_with_min_above_max_gives_max(device):
    """clamp(x, lo, hi) = min(max(x, lo), hi): where lo > hi the gradient goes to hi only."""
    low = np.array([[0.0, 1.0, 2.0, 3.0], [-1.0, 1.0, 0.5, 0.0]])
    high = np.array([[1.0, 0.0, 1.0, 4.0], [-2.0, 0.5, 2.0, 1.0]])
    compare(lambda lib, x, lo, hi: lib.clamp(x, lo, hi), [A + 0.1, low, high], device)
    compare(lambda lib, x, hi: lib.clamp(x, scalar(lib, 0.7, x), hi), [A + 0.1, high], device)
    compare(lambda lib, x, lo: lib.clamp(x, lo, scalar(lib, 0.2, x)), [A + 0.1, low], device)


@pytest.mark.parametrize("exponent", [0.0, 2.0, 0.5])
def test_pow_at_zero(device, exponent):
    """x**0 has gradient 0 at x = 0 (not 0 * inf), and d/dy 0**y is 0 for y >= 0."""
    base = np.array([0.0, 1.5, 0.0, 2.0])
    compare(lambda lib, x: lib.pow(x, exponent), [base], device)
    expo = np.array([0.0, 1.0, 2.0, 0.0])
    compare(lambda lib, x, y: lib.pow(x, y), [base, expo], device)


def test_scalar_first_operands(device):
    """A Python scalar in a tensor position (2 ** x, xlogy(3, y)...) gets no gradient; the
    tensor operand gets PyTorch's."""
    x = np.abs(A) + 0.5
    compare(lambda lib, t: lib.pow(2.5, t), [x], device)
    compare(lambda lib, t: lib.xlogy(t, 3.0) + lib.xlogy(2.0, t), [x], device)
    compare(lambda lib, t: lib.copysign(scalar(lib, 1.5, t), t), [A + 0.1], device)
    compare(
        lambda lib, t: lib.fmax(t, scalar(lib, 0.4, t)) + lib.fmin(t, scalar(lib, -0.2, t)),
        [A],
        device,
    )
    compare(lambda lib, t: lib.maximum(t, lib.zeros_like(t)), [A], device)


def test_ties_split_the_gradient(device):
    compare(lambda lib, a, b: lib.maximum(a, b) + lib.minimum(a, b) * 3, [A, B], device)
    compare(lambda lib, a: lib.amax(a, 1) + lib.amin(a, 0).sum(), [np.ones((2, 3))], device)


def test_xlogy_at_zero(device):
    """d/da xlogy(a, b) is log(b) at a = 0 too, and 0 where a = 0 and b <= 0."""
    compare(lambda lib, a, b: lib.xlogy(a, b), [A, np.abs(B) + 0.5], device)
    compare(lambda lib, a, b: lib.xlogy(a, b), [A, np.array([1.0, 0.0, 2.0, -1.0])], device)


def test_prod_and_cumprod_with_zeros(device):
    """Zero-safe: the gradient at a zero is the product of the others."""
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.5, 2.0, -1.0]])
    compare(lambda lib, t: lib.prod(t), [x[2:]], device)
    compare(lambda lib, t: lib.prod(t, 1), [x], device)
    compare(lambda lib, t: lib.prod(t, 0, keepdim=True), [x], device)
    compare(lambda lib, t: lib.cumprod(t, 1), [x], device)
    compare(lambda lib, t: lib.cumprod(t, 0), [x], device)


def test_zero_dim_and_empty_inputs(device):
    compare(lambda lib, t: lib.cumsum(t, -1), [np.array(1.5)], device)
    compare(lambda lib, t: lib.cumprod(t, 0), [np.array(1.5)], device)
    compare(lambda lib, t: lib.prod(t, 1), [np.zeros((3, 0))], device)
    compare(lambda lib, t: lib.prod(t), [np.zeros((0,))], device)
    empty = np.zeros((0, 3))
    compare(
        lambda lib, t: lib.take(t, lib.tensor([], dtype=lib.int64, device=t.device)),
        [empty],
        device,
    )


def test_abs_relu_sign_at_zero(device):
    """At the kink PyTorch picks 0 for abs and relu (sign(0) = 0, relu's mask is x > 0)."""
    compare(lambda lib, t: lib.abs(t) + lib.relu(t) + lib.sign(t), [A], device)
