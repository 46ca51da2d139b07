"""masked_fill's direct path (kinds/index.masked_fill: where's kernel with the number as its
scalar operand) and its own formula, against PyTorch: values for every category of dtype,
masks broadcast to the input and inputs broadcast up to the mask, numbers and 0-d tensor
values, PyTorch's errors, float64 gradients (a 0-d value's included), node names and saved
masks; and that a number reaches the kernel without a tensor made for it or where's runner."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

torch = pytest.importorskip("torch")

SHAPES = [  # (input, mask): minGPT's causal mask, a row mask, an input broadcast up, 0-d, empty
    ((2, 3, 6, 6), (1, 1, 6, 6)),
    ((3, 4), (4,)),
    ((4,), (3, 4)),
    ((), ()),
    ((0, 3), (3,)),
]
DTYPES = ["float32", "float64", "bfloat16", "int64", "uint8", "bool"]
VALUES = [float("-inf"), 2, 2.5, True, 0]


def _pair(xs, ms, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs) * 5
    mask = rng.random(ms) < 0.5
    return (
        (torch.tensor(x).to(getattr(torch, dtype)), torch.tensor(mask)),
        (ember.tensor(x).to(getattr(ember, dtype)), ember.tensor(mask)),
    )


def _numpy(t):
    return t.float().numpy() if t.dtype in (torch.bfloat16, ember.bfloat16) else t.numpy()


# -inf into an integer dtype is an error in both (test_errors_match_torch: nan)
CASES = [
    (dtype, value)
    for dtype in DTYPES
    for value in VALUES
    if not (dtype in ("int64", "uint8") and value == float("-inf"))
]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize(("dtype", "value"), CASES)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_values_match_torch(shapes, dtype, value, as_tensor):
    (tx, tm), (ex, em) = _pair(*shapes, dtype)
    tv, ev = (torch.tensor(value), ember.tensor(value)) if as_tensor else (value, value)
    want, got = tx.masked_fill(tm, tv), ex.masked_fill(em, ev)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[1]
    np.testing.assert_array_equal(_numpy(got), _numpy(want))


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: x.masked_fill(m.tensor([True, False]), 300),  # not in uint8
        lambda m, x: x.masked_fill(m.tensor([True, False]), float("nan")),
        lambda m, x: x.masked_fill(m.tensor([1, 0], dtype=m.uint8), 1),  # not a bool mask
        lambda m, x: x.masked_fill(m.tensor([True, False]), m.ones(1)),  # not a 0-d value
        lambda m, x: x.masked_fill(m.tensor([True, False, True]), 1),  # does not broadcast
    ],
)
def test_errors_match_torch(call):
    with pytest.raises(Exception) as want:
        call(torch, torch.zeros(2, dtype=torch.uint8))
    with pytest.raises(Exception) as got:
        call(ember, ember.zeros(2, dtype=ember.uint8))
    assert got.type is want.type


# in place, the input must hold the broadcast shape (an input broadcast up is an error)
GRAD_CASES = [(s, inplace) for s in SHAPES[:3] for inplace in (False, True) if s != ((4,), (3, 4))]
GRAD_CASES.append((((4,), (3, 4)), False))


@pytest.mark.parametrize(("shapes", "inplace"), GRAD_CASES)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_gradients_match_torch(shapes, as_tensor, inplace):
    (tx, tm), (ex, em) = _pair(*shapes, "float64", seed=1)
    grads = np.random.default_rng(2).standard_normal(torch.broadcast_shapes(tx.shape, tm.shape))
    results = []
    for lib, x, mask in ((torch, tx, tm), (ember, ex, em)):
        x = x.clone().requires_grad_()
        value = lib.tensor(1.5, dtype=lib.float64, requires_grad=True) if as_tensor else 1.5
        out = (x * 1).masked_fill_(mask, value) if inplace else x.masked_fill(mask, value)
        out.backward(lib.tensor(grads))
        results.append((out, x.grad, value.grad if as_tensor else None))
    (tout, tgx, tgv), (eout, egx, egv) = results
    assert eout.grad_fn.name() == tout.grad_fn.name()
    np.testing.assert_allclose(egx.numpy(), tgx.numpy())
    if as_tensor:
        np.testing.assert_allclose(egv.numpy(), tgv.numpy())


def test_node_and_saved_mask_match_torch():
    (tx, tm), (ex, em) = _pair((2, 3, 6, 6), (1, 1, 6, 6), "float64")
    for as_tensor in (False, True):
        nodes = []
        for lib, x, mask in ((torch, tx, tm), (ember, ex, em)):
            x = x.clone().requires_grad_()
            value = lib.tensor(0.5, dtype=lib.float64, requires_grad=True) if as_tensor else 0.5
            nodes.append(x.masked_fill(mask, value).grad_fn)
        want, got = nodes
        assert got.name() == want.name()
        assert len(got.next_functions) == len(want.next_functions)
        np.testing.assert_array_equal(got._saved_mask.numpy(), want._saved_mask.numpy())


def test_double_backward_matches_torch():
    (tx, tm), (ex, em) = _pair((3, 4), (4,), "float64", seed=3)
    found = []
    for lib, x, mask in ((torch, tx, tm), (ember, ex, em)):
        x = x.clone().requires_grad_()
        out = (x * x).masked_fill(mask, -2.0).sum()
        (g,) = lib.autograd.grad(out, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        found.append(gg.numpy())
    np.testing.assert_allclose(found[1], found[0])


def test_number_reaches_the_kernel_directly(monkeypatch):
    """No 0-d tensor for the number and no where runner: the cost the fast path removes."""
    x = ember.randn(2, 3, 6, 6, requires_grad=True)
    mask = ember.tril(ember.ones(6, 6)).view(1, 1, 6, 6) == 0
    where, made = OPS["where"], []
    monkeypatch.setattr(where, "runner", lambda op, *args: made.append("where") or None)
    monkeypatch.setattr(ember, "tensor", lambda *a, **k: made.append("tensor") or None)
    out = x.masked_fill(mask, float("-inf"))
    assert made == []
    assert bool((out[0, 0].isinf() == mask[0, 0]).all())
