"""The backward engine: order, accumulation, graph release, errors, hooks, inputs= and
higher-order gradients, checked against PyTorch where it has the same API."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import grad


def _leaf(values, device, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype, device=device).requires_grad_()


def test_grad_follows_every_path_to_an_input(device):
    """Paths that fork and rejoin before reaching the input all contribute (d/dx x*x = 2x, and
    its derivative 2); autograd.grad only runs nodes leading to the inputs."""
    x = _leaf(0.7, device)
    (first,) = grad(x * x, x, create_graph=True)
    assert first.item() == pytest.approx(1.4)
    (second,) = grad(first, x)
    assert second.item() == pytest.approx(2.0)
    y = ember.cat([x.reshape(1).narrow(0, 0, 1), x.reshape(1)]).sum()
    assert grad(y, x)[0].item() == pytest.approx(2.0)


def test_leaf_grads_never_alias_other_tensors(device):
    """add's backward gives both inputs the same tensor, and that tensor is the caller's
    gradient: each leaf must own its .grad, or accumulating into one writes into the others."""
    given = ember.ones(3, device=device)
    x1 = ember.zeros(3, device=device).requires_grad_()
    x2 = ember.zeros(3, device=device).requires_grad_()
    for _ in range(2):
        (x1 + x2).backward(given)
    assert given.tolist() == [1.0, 1.0, 1.0]
    assert x1.grad.tolist() == [2.0, 2.0, 2.0] and x2.grad.tolist() == [2.0, 2.0, 2.0]
    assert x1.grad is not x2.grad and x1.grad is not given
    seen = []
    x3 = ember.zeros(3, device=device).requires_grad_()
    x3.register_hook(lambda g: seen.append(g))
    (x3 * 2).sum().backward()
    (x3 * 2).sum().backward()
    assert [g.tolist() for g in seen] == [[2.0] * 3, [2.0] * 3]  # hooks' references stay intact


def test_leaf_takes_over_a_fresh_gradient(device):
    """A gradient nothing else references becomes .grad without a copy (PyTorch steals it)."""
    x = ember.ones(2, 3, device=device).requires_grad_()
    w = ember.ones(3, 4, device=device)
    seen = []
    y = x.mm(w)
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_inputs[0]))
    y.sum().backward()
    assert x.grad.tolist() == [[4.0] * 3] * 2
    assert x.grad is not seen[0]  # a hook saw it: copied
    x.grad = None
    x.mm(w).sum().backward()
    assert x.grad._base is None and x.grad.is_contiguous()


def test_leaf_takes_over_a_view_nothing_else_holds(device, monkeypatch):
    """linear's weight gradient is the transpose of a transposed product: contiguous, and
    referenced by nothing else, so the leaf keeps its memory (as an alias without a base)
    instead of copying it; a view of the caller's gradient is still copied."""
    clones = []
    clone = ember.Tensor.clone
    monkeypatch.setattr(ember.Tensor, "clone", lambda t: clones.append(t) or clone(t))
    lin = ember.nn.Linear(3, 4).to(device)
    lin(ember.ones(2, 3, device=device)).sum().backward()
    assert not clones
    for g in (lin.weight.grad, lin.bias.grad):
        assert g._base is None and g.is_contiguous()
    assert lin.weight.grad.tolist() == [[2.0] * 3] * 4 and lin.bias.grad.tolist() == [2.0] * 4
    given = ember.ones(3, 2, device=device)
    w = ember.zeros(2, 3, device=device).requires_grad_()
    for _ in range(2):
        w.t().backward(given)
    assert given.tolist() == [[1.0] * 2] * 3 and w.grad.tolist() == [[2.0] * 3] * 2


# ---- hooks and retain_grad, against PyTorch ------------------------------------------------------
def _hooks_and_retain(lib, device=None):
    """A graph with tensor hooks (leaf and non-leaf), node hooks and retain_grad; returns what
    every hook saw and every .grad."""
    kw = {"device": device} if lib is ember else {}
    log = []
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, **kw).requires_grad_()
    x.register_hook(lambda g: log.append(("x", g.tolist())))
    y = x * x
    y.retain_grad()
    y.register_hook(lambda g: g * 10)  # runs before retain_grad stores .grad: .grad is 10x
    handle = y.register_hook(lambda g: log.append(("never", g.tolist())))
    handle.remove()
    z = y.sin()
    z.retain_grad()
    z.grad_fn.register_hook(lambda gi, go: log.append(("node", [g.tolist() for g in gi])))
    z.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
    w = z * 2
    w.retain_grad()
    w.mul_(3)  # retain_grad follows the new value: w.grad is the gradient after mul_
    w.sum().backward()
    (x * 2).sum().backward()
    grads = [t.grad.tolist() for t in (x, y, z, w)]
    return log, grads


def test_hooks_and_retain_grad_match_pytorch(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _hooks_and_retain(ember, device), _hooks_and_retain(torch)
    assert len(ours[0]) == len(theirs[0])
    for (name, got), (want_name, want) in zip(ours[0], theirs[0]):
        assert name == want_name
        np.testing.assert_allclose(got, want, err_msg=name)
    for got, want in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(got, want)


def test_leaf_hooks_apply_to_autograd_grad(device):
    x = _leaf([1.0, 2.0], device)
    x.register_hook(lambda g: g * 10)
    assert grad((x * x).sum(), x)[0].tolist() == [20.0, 40.0]
    assert x.grad is None


def test_retained_grad_is_a_copy(device):
    """retain_grad stores a copy: later backward calls accumulate into it without touching the
    caller's gradient."""
    x = _leaf([1.0, 2.0], device)
    y = x + 0
    y.retain_grad()
    given = ember.ones(2, dtype=ember.float64, device=device)
    y.backward(given, retain_graph=True)
    y.backward(given)
    assert given.tolist() == [1.0, 1.0]
    assert y.grad.tolist() == [2.0, 2.0] and x.grad.tolist() == [2.0, 2.0]
    assert y.retains_grad and not x.retains_grad


# ---- accumulation, release, errors ---------------------------------------------------------------
def test_gradients_accumulate_over_paths_and_calls(device):
    x = _leaf([1.0, 2.0], device)
    y = x * x + x.exp() + x  # x reaches the loss along four paths
    y.sum().backward(retain_graph=True)
    first = x.grad.tolist()
    y.sum().backward()
    expected = [2 * v + np.exp(v) + 1 for v in (1.0, 2.0)]
    np.testing.assert_allclose(first, expected)
    np.testing.assert_allclose(x.grad.tolist(), [2 * e for e in expected])


def test_nodes_run_once_after_all_their_gradients(device):
    """A diamond: the shared node runs once, with the sum of both branches' gradients."""
    x = _leaf([1.0, 2.0], device)
    h = x.exp()
    calls = []
    h.grad_fn.register_prehook(lambda grads: calls.append(grads[0].tolist()))
    (h * 2 + h * 3).sum().backward()
    assert calls == [[5.0, 5.0]]
    np.testing.assert_allclose(x.grad.tolist(), 5 * np.exp([1.0, 2.0]))


def test_second_backward_through_freed_graph(device):
    x = _leaf([1.0, 2.0], device)
    y = x.exp().sum()  # exp saves its result
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        grad(y, x)
    z = (x * 2 + 1).sum()  # saves nothing: PyTorch allows a second pass too
    z.backward()
    z.backward()
    y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()


def test_non_scalar_needs_a_gradient(device):
    x = _leaf([1.0, 2.0], device)
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(3, dtype=ember.float64, device=device))
    (x * 2).reshape(1, 2)[:, :1].backward()  # one element: fine
    assert x.grad.tolist() == [2.0, 0.0]


def test_integer_outputs_are_not_differentiable(device):
    x = _leaf([1.0, -2.0, 3.0], device)
    values, indices = x.sort()
    outputs = [x.argmax(), x > 0, x.long(), indices, x.max(0)[1], x.nonzero()]
    assert all(not t.requires_grad and t.grad_fn is None for t in outputs)
    assert values.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.long().sum().backward()


def test_backward_inputs(device):
    """inputs= accumulates only into the given tensors; a non-leaf input gets .grad too."""
    x = _leaf([1.0, 2.0], device)
    w = _leaf([3.0, 4.0], device)
    h = x * w
    loss = (h * h).sum()
    loss.backward(inputs=[w, h], retain_graph=True)
    assert x.grad is None
    np.testing.assert_allclose(w.grad.tolist(), [2 * 3 * 1 * 1, 2 * 4 * 2 * 2])
    np.testing.assert_allclose(h.grad.tolist(), [2 * 3.0, 2 * 8.0])
    loss.backward(inputs=x)
    np.testing.assert_allclose(x.grad.tolist(), [2 * 9.0, 2 * 32.0])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        loss.backward(inputs=[])


def test_autograd_grad_options(device):
    x = _leaf([1.0, 2.0], device)
    unused = _leaf([5.0], device)
    y = x * x
    given = ember.tensor([1.0, 10.0], dtype=ember.float64, device=device)
    (gx,) = grad(y, x, grad_outputs=given, retain_graph=True)
    assert gx.tolist() == [2.0, 40.0] and x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        grad(y.sum(), [x, unused], retain_graph=True)
    assert grad(y.sum(), [x, unused], allow_unused=True, retain_graph=True)[1] is None
    assert grad(y.sum(), [x, unused], materialize_grads=True, retain_graph=True)[1].tolist() == [0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        grad(y.sum(), ember.ones(2, device=device))


def test_multiple_roots(device):
    x = _leaf([1.0, 2.0], device)
    ember.autograd.backward([(x * 2).sum(), x * 3], [None, ember.ones(2, dtype=ember.float64)])
    assert x.grad.tolist() == [5.0, 5.0]
    x.backward(ember.tensor([1.0, 2.0], dtype=ember.float64, device=device))  # a leaf root
    assert x.grad.tolist() == [6.0, 7.0]


def test_gradient_dtype_follows_the_input(device):
    x = _leaf([1.0, 2.0], device, dtype=ember.float32)
    (x.double() * 2).sum().backward()
    assert x.grad.dtype is ember.float32 and x.grad.tolist() == [2.0, 2.0]


def test_deep_graphs_do_not_recurse(device):
    x = _leaf([1.0], device)
    y = x
    for _ in range(5000):
        y = y * 1.0001
    y.backward(retain_graph=True)
    assert x.grad.item() == pytest.approx(1.0001**5000)
    assert grad(y, x)[0].item() == pytest.approx(1.0001**5000)


def test_graph_structure_and_names(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 2 + x
    assert y.grad_fn.name() == "AddBackward0" and not y.is_leaf and x.is_leaf
    names = [edge[0].name() for edge in y.grad_fn.next_functions]
    assert names == ["MulBackward0", "torch::autograd::AccumulateGrad"]  # PyTorch's names
    assert y.grad_fn.next_functions[1][0].variable is x
    assert ember.ones(2).grad_fn is None and not ember.ones(2).requires_grad


# ---- higher order --------------------------------------------------------------------------------
def _gradient_penalty(lib, device=None):
    kw = {"device": device} if lib is ember else {}
    rng = np.random.default_rng(3)
    w = lib.tensor(rng.standard_normal((4, 3)), **kw).requires_grad_()
    x = lib.tensor(rng.standard_normal((5, 4)), **kw).requires_grad_()
    out = (x.mm(w)).tanh().sum()
    (gx,) = lib.autograd.grad(out, x, create_graph=True)
    penalty = ((gx * gx).sum(1) - 1).pow(2).mean()
    penalty.backward()
    third = (x**3).sum()
    third.backward(create_graph=True)
    g2 = x.grad.clone()
    x.grad = None
    g2.sum().backward()
    return [w.grad.cpu().numpy(), x.grad.cpu().numpy()]


@pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")  # torch's own
def test_higher_order_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    for got, want in zip(_gradient_penalty(ember, device), _gradient_penalty(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_create_graph_leaves_differentiable_grads(device):
    x = _leaf([1.0, 2.0], device)
    (x**3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    (second,) = grad(x.grad.sum(), x)
    assert second.tolist() == [6.0, 12.0]


@pytest.mark.parametrize("call", ["grad", "backward"])
def test_deprecated_arguments_keep_torchs_positions_and_warnings(call):
    """grad's ``only_inputs`` (6th) and backward's ``grad_variables`` (5th) are PyTorch's
    deprecated arguments: accepted in their positions, warned, with the same results."""
    import warnings

    import torch

    seen = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if call == "grad":
                (result,) = lib.autograd.grad(y, x, None, True, False, False)
            else:
                lib.autograd.backward(y, None, False, False, lib.tensor(3.0))
                result = x.grad
        messages = [str(w.message) for w in caught if w.category is FutureWarning]
        seen.append((result.tolist(), messages))
    assert seen[1] == seen[0]
    assert len(seen[0][1]) == 1
    if call == "backward":
        x = ember.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="both passed"), pytest.warns(FutureWarning):
            ember.autograd.backward(x.sum(), ember.tensor(1.0), grad_variables=ember.tensor(1.0))
