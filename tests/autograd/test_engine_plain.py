"""The engine's plain walk (``loss.backward()`` with no capture, pruning or anomaly mode) and its
cached root gradient: what they skip must not change what a program sees. Each case runs the
same program in PyTorch and compares values, and checks that no ``.grad`` aliases a tensor the
program holds (an in-place write into one would show in the other)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import engine

torch = pytest.importorskip("torch")


def _scalar_roots(lib):
    """Scalar losses whose root gradient reaches a leaf as it is or as a view of it."""
    a = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
    b = lib.tensor([2.0], dtype=lib.float64, requires_grad=True)
    c = lib.tensor(5.0, dtype=lib.float32, requires_grad=True)
    for _ in range(3):
        a.clone().backward()
        b.reshape(()).backward()
        (c * 1).clone().backward()
    grads = [t.grad for t in (a, b, c)]
    before = [g.tolist() for g in grads]
    for g in grads:
        g.mul_(10)  # a leaf's .grad is its own: the next root gradient is still one
    a.clone().backward()
    b.reshape(()).backward()
    c.clone().backward()
    return before, [t.grad.tolist() for t in (a, b, c)]


def test_root_gradient_never_becomes_a_leafs_grad():
    assert _scalar_roots(ember) == _scalar_roots(torch)


def _kept_root_grads(lib, numpy_view: bool):
    """A Function's backward keeps every grad_output it sees (a program may), and writes into
    it."""
    kept = []

    class Keep(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            kept.append(g.detach().numpy() if numpy_view else g)
            return g * 1

    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    for _ in range(3):
        Keep.apply(x.sum() * 1).clone().backward()  # the root gradient reaches the Function
        if numpy_view:
            kept[-1][()] = 7.0  # written through a numpy view of its memory
        else:
            kept[-1].add_(1.0)
    return [float(k) for k in kept], x.grad.tolist()


@pytest.mark.parametrize("numpy_view", [False, True])
def test_a_kept_root_gradient_is_never_handed_out_again(numpy_view):
    """A program that keeps (or writes into) the gradient a backward gave it does not see it
    change in the next backward, and the next backward still starts from one."""
    assert _kept_root_grads(ember, numpy_view) == _kept_root_grads(torch, numpy_view)
    kept, _ = _kept_root_grads(ember, numpy_view)
    assert len(set(map(id, kept))) == len(kept)


def test_root_unit_is_reused_when_nothing_holds_it():
    """The cached one serves every plain scalar backward (else it saves nothing)."""
    w = ember.randn(4, requires_grad=True)
    units = set()
    for _ in range(4):
        loss = (w * 2).sum()
        loss.backward()
        units.add(id(engine._UNITS[(ember.float32, loss._storage.device)][0]))
    assert len(units) == 1
    np.testing.assert_allclose(w.grad.numpy(), np.full(4, 8.0))


def _leaf_used_twice(lib):
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([0.5, 0.25, 2.0], dtype=lib.float64, requires_grad=True)
    (x * x + x + x * y).sum().backward()
    (x + x).sum().backward()
    held = x.grad
    (x * 3).sum().backward()  # accumulates in place into the .grad the program holds
    return held.tolist(), x.grad.tolist(), y.grad.tolist(), held is x.grad


def test_leaf_used_twice_matches_pytorch():
    assert _leaf_used_twice(ember) == _leaf_used_twice(torch)


def _hooks_replace(lib):
    held = lib.tensor([100.0, 200.0], dtype=lib.float64)
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
    z = lib.tensor([5.0, 6.0], dtype=lib.float64, requires_grad=True)
    x.register_hook(lambda g: held)  # x's .grad starts as the hook's tensor: a copy of it
    h = y * 2
    h.register_hook(lambda g: g * 3)
    p = z.exp()
    p.grad_fn.register_hook(lambda gi, go: (held,))
    (x * 1 + h + p).sum().backward()
    (x * 1 + y * 2 + z.exp()).sum().backward()
    return held.tolist(), x.grad.tolist(), y.grad.tolist(), z.grad.tolist()


def test_hooks_that_replace_gradients_match_pytorch():
    ours, theirs = _hooks_replace(ember), _hooks_replace(torch)
    assert ours[0] == [100.0, 200.0]
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want)


def _grad_is_a_view(lib):
    base = lib.zeros(2, 3, dtype=lib.float64)
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    x.grad = base[1]
    (x * x).sum().backward()  # accumulates in place: into base's row too
    (x * 2).sum().backward()
    return base.tolist(), x.grad.tolist(), x.grad._base is base if lib is ember else True


def test_existing_grad_that_is_a_view_matches_pytorch():
    assert _grad_is_a_view(ember) == _grad_is_a_view(torch)


def _same_gradient_for_three(lib):
    class Three(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, c):
            return a + b + c

        @staticmethod
        def backward(ctx, g):
            return g, g, g

    leaves = [lib.zeros(2, dtype=lib.float64, requires_grad=True) for _ in range(3)]
    for _ in range(2):
        Three.apply(*leaves).sum().backward()
    leaves[0].grad.add_(5)  # each leaf owns its .grad
    return [t.grad.tolist() for t in leaves]


def test_one_gradient_for_three_leaves_is_copied():
    assert _same_gradient_for_three(ember) == _same_gradient_for_three(torch)


def _saved_freed(lib):
    w = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    loss = (w.exp() * w).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    loss = (w.exp() * w).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return w.grad.tolist()


def test_plain_walk_frees_saved_tensors_and_keeps_them_when_retained():
    np.testing.assert_allclose(_saved_freed(ember), _saved_freed(torch))


def _float64_mlp(lib):
    lib.manual_seed(0)
    w1 = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)
    w2 = lib.tensor(np.linspace(-0.5, 0.7, 8).reshape(2, 4), requires_grad=True)
    x = lib.tensor(np.linspace(0.1, 0.9, 15).reshape(5, 3))
    h = lib.nn.functional.gelu(x @ w1.t())
    out = lib.nn.functional.log_softmax(h @ w2.t(), dim=1)
    loss = -(out[:, 0] + out[:, 1] * 0.5).mean() + (h * h).sum() * 1e-2
    loss.backward()
    return w1.grad.detach().numpy(), w2.grad.detach().numpy()


def test_plain_walk_gradients_match_pytorch_in_float64():
    for got, want in zip(_float64_mlp(ember), _float64_mlp(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
