"""The compiled pair's own autograd node (compiler/pair_node.py): PyTorch's
``CompiledFunctionBackward``, with eager's gradients where an output gets none, a second
backward refused once its values are freed, outputs that are the call's own tensors left
alone, and forward AD or vmap through the pair on autograd.Function's path."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.compiler import pair_node


def _two(x, w):
    h = (x * w).tanh()
    return h * 2.0, (h + x).sin()


def _warm(fn, *args):
    for _ in range(2):  # capture, then the pair
        fn(*args)


def test_the_node_is_pytorchs_compiled_function_backward():
    w = ember.randn(3, requires_grad=True)
    compiled = ember.compile(_two)
    x = ember.randn(2, 3)
    _warm(compiled, x, w)
    a, b = compiled(x, w)
    assert isinstance(a.grad_fn, pair_node.PairNode) and a.grad_fn is b.grad_fn
    assert type(a.grad_fn).__name__ == "CompiledFunctionBackward"
    assert a.grad_fn.name() == "CompiledFunctionBackward"
    assert b.grad_fn is a.grad_fn and b.output_nr == 1
    (edge,) = [e for e in a.grad_fn.next_functions if e[0] is not None]
    assert edge[0].variable is w


def test_an_output_without_gradient_counts_as_zeros():
    ember.manual_seed(0)
    x, w = ember.randn(2, 3), ember.randn(3, requires_grad=True)
    compiled = ember.compile(_two)
    _warm(compiled, x, w)
    compiled(x, w)[1].sum().backward()  # nothing reaches the first output
    got = w.grad.numpy().copy()
    w.grad = None
    _two(x, w)[1].sum().backward()
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-6)


def test_a_second_backward_needs_retain_graph():
    x, w = ember.randn(2, 3), ember.randn(3, requires_grad=True)
    compiled = ember.compile(_two)
    _warm(compiled, x, w)
    loss = compiled(x, w)[0].sum()
    loss.backward(retain_graph=True)
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_an_output_that_is_an_input_keeps_the_input_a_leaf():
    def passes(x, w):
        return x, x * w

    x = ember.randn(4, requires_grad=True)
    w = ember.randn(4, requires_grad=True)
    compiled = ember.compile(passes)
    _warm(compiled, x, w)
    same, product = compiled(x, w)
    assert x.is_leaf and x.grad_fn is None
    (same.sum() + product.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 1.0 + w.detach().numpy(), rtol=1e-6)


def test_forward_ad_through_the_pair_uses_the_function_path():
    import ember.autograd.forward_ad as fwAD

    x, w = ember.randn(2, 3), ember.randn(3, requires_grad=True)
    tangent = ember.randn(2, 3)
    compiled = ember.compile(_two)
    _warm(compiled, x, w)
    with fwAD.dual_level():
        out = compiled(fwAD.make_dual(x, tangent), w)[0]
        got = fwAD.unpack_dual(out).tangent
        want = fwAD.unpack_dual(_two(fwAD.make_dual(x, tangent), w)[0]).tangent
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5)
