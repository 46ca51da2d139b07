"""ember.autograd.Function with every ctx feature, the same classes defined over ember and over
torch and run side by side: save_for_backward, needs_input_grad, mark_non_differentiable,
mark_dirty, set_materialize_grads, once_differentiable, setup_context, double backward."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

from .oracle import torch


def define(lib):
    """The same custom Functions written against ``lib`` (ember or torch)."""
    Function = lib.autograd.Function
    once_differentiable = lib.autograd.function.once_differentiable

    class ScaledProduct(Function):
        """x * y * k with a Python scalar k, and the argmax of x as an integer output."""

        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_backward(x, y)
            ctx.k = k
            index = x.argmax()
            ctx.mark_non_differentiable(index)
            return x * y * k, index

        @staticmethod
        def backward(ctx, grad, grad_index):
            x, y = ctx.saved_tensors
            ctx.seen = ctx.needs_input_grad
            gx = grad * y * ctx.k if ctx.needs_input_grad[0] else None
            gy = grad * x * ctx.k if ctx.needs_input_grad[1] else None
            return gx, gy, None

    class Cube(Function):
        """Saves its output; differentiable backward (written in ops): double backward works."""

        @staticmethod
        def forward(ctx, x):
            y = x * x * x
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad):
            x, y = ctx.saved_tensors
            return 3 * grad * y / x

    class OnceCube(Cube):
        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            x, _ = ctx.saved_tensors
            return 3 * grad * x * x

    class DoubleInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    class Split(Function):
        """Two outputs; without materialized grads an unused output's gradient is None."""

        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.got_none = (g1 is None, g2 is None)
            total = 0
            if g1 is not None:
                total = total + g1 * 2
            if g2 is not None:
                total = total + g2 * 3
            return total

    class Passthrough(Function):
        """Returns its input unchanged: the output still gets its own history."""

        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 5

    class Exp(Function):
        """The setup_context style: forward without ctx."""

        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * result

    return {
        name: cls
        for name, cls in locals().items()
        if isinstance(cls, type) and issubclass(cls, Function) and cls is not Function
    }


X = np.array([0.5, -1.5, 2.0])
Y = np.array([1.5, 0.25, -2.0])


def _pair(device):
    return [
        (lib, define(lib), {"device": device} if lib is ember else {}) for lib in (ember, torch)
    ]


def _compare(values, what):
    (a, b) = values
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None, what
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), err_msg=what)


def test_save_for_backward_needs_input_grad_non_differentiable(device):
    results = []
    for lib, fns, kw in _pair(device):
        x = lib.tensor(X, **kw).requires_grad_()
        y = lib.tensor(Y, **kw)
        out, index = fns["ScaledProduct"].apply(x, y, 2.0)
        assert not index.requires_grad and out.requires_grad
        out.sum().backward()
        ctx = out.grad_fn
        results.append([x.grad.tolist(), y.grad, ctx.seen, index.item()])
    _compare(results, "ScaledProduct")
    assert results[0][2] == (True, False, False)


def test_double_backward_through_a_function(device):
    results = []
    for lib, fns, kw in _pair(device):
        x = lib.tensor(X, **kw).requires_grad_()
        (first,) = lib.autograd.grad(fns["Cube"].apply(x).sum(), x, create_graph=True)
        (second,) = lib.autograd.grad(first.sum(), x)
        results.append([first.tolist(), second.tolist()])
    _compare(results, "Cube")
    np.testing.assert_allclose(results[0][1], 6 * X)


def test_once_differentiable_refuses_double_backward(device):
    for lib, fns, kw in _pair(device):
        x = lib.tensor(X, **kw).requires_grad_()
        (first,) = lib.autograd.grad(fns["OnceCube"].apply(x).sum(), x, create_graph=True)
        np.testing.assert_allclose(first.tolist(), 3 * X * X)
        assert not first.requires_grad, lib.__name__
        with pytest.raises(RuntimeError, match="does not require grad"):
            first.sum().backward()


def test_mark_dirty(device):
    results = []
    for lib, fns, kw in _pair(device):
        a = lib.tensor(X, **kw).requires_grad_()
        x = a * 1
        y = fns["DoubleInPlace"].apply(x)
        assert y is x
        (y * y).sum().backward()
        results.append([a.grad.tolist(), y.tolist()])
    _compare(results, "DoubleInPlace")


def test_materialize_grads_off_passes_none(device):
    results = []
    for lib, fns, kw in _pair(device):
        x = lib.tensor(X, **kw).requires_grad_()
        first, _second = fns["Split"].apply(x)
        first.sum().backward()
        results.append([x.grad.tolist(), first.grad_fn.got_none])
    _compare(results, "Split")
    assert results[0][1] == (False, True)


def test_returned_input_and_setup_context(device):
    results = []
    for lib, fns, kw in _pair(device):
        x = lib.tensor(X, **kw).requires_grad_()
        y = fns["Passthrough"].apply(x)
        assert y is not x and not y.is_leaf
        z = fns["Exp"].apply(y)
        z.sum().backward()
        results.append([x.grad.tolist(), z.tolist()])
    _compare(results, "Passthrough + Exp")


def test_saved_tensor_version_check_and_release(device):
    fns = define(ember)
    x = ember.tensor(X, device=device).requires_grad_()
    h = x * 1
    y = fns["Cube"].apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"saved by CubeBackward, is at version 1; expected"):
        y.sum().backward()
    y = fns["Cube"].apply(x * 1)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_no_recording_without_grad(device):
    fns = define(ember)
    x = ember.tensor(X, device=device)
    assert fns["Cube"].apply(x).grad_fn is None
    with ember.no_grad():
        assert fns["Cube"].apply(x.requires_grad_()).grad_fn is None


def test_gradcheck_of_functions(device):
    fns = define(ember)
    x = ember.tensor(X, device=device).requires_grad_()
    y = ember.tensor(Y, device=device).requires_grad_()
    assert gradcheck(lambda a, b: fns["ScaledProduct"].apply(a, b, 1.5), (x, y))
    assert gradgradcheck(fns["Cube"].apply, (x,))
