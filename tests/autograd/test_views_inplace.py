"""Views and in-place ops against PyTorch: writes through views (``x[idx] = v``, ``view.mul_(2)``)
reach the base's history (CopySlices), views see in-place changes of their base (view replay),
and the errors for in-place ops on leaves, for detaching views and for modified saved tensors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import torch

X = np.arange(1.0, 13.0).reshape(3, 4) / 4


def _start(lib, device):
    kw = {"device": device} if lib is ember else {}
    x = lib.tensor(X, **kw).requires_grad_()
    w = lib.tensor([0.5, -1.0, 2.0, 1.5], dtype=lib.float64, **kw).requires_grad_()
    return x, w, kw


def basic_setitem(lib, x, w, kw):
    y = x * 1
    y[1] = w * 2
    y[0, 1:3] = 7.0
    return y


def advanced_setitem(lib, x, w, kw):
    y = x * 1
    y[lib.tensor([2, 0], **kw)] = w.exp()
    y[:, lib.tensor([3], **kw)] = w[:3].reshape(3, 1)
    return y


def masked_setitem(lib, x, w, kw):
    y = x * 2
    y[y > 3] = 0.0
    return y.exp()


def view_mul_(lib, x, w, kw):
    y = x * 1
    y.t()[1].mul_(2)
    y[:, 2:].mul_(w[:2])
    return y * y


def view_of_view(lib, x, w, kw):
    y = x.sin()
    v = y[1:][:, ::2]
    v.add_(w[:2] * w[:2])
    return y


def base_changed_after_view(lib, x, w, kw):
    y = x * 1
    v = y[:, 1]
    y.mul_(w)
    return v * v


def sibling_view_changed(lib, x, w, kw):
    y = x * 2
    row, column = y[0], y[:, 0]
    row.mul_(3)
    return column.exp()


def inplace_into_plain_tensor(lib, x, w, kw):
    y = lib.zeros(3, 4, dtype=lib.float64, **kw)
    y[1].copy_(w)
    y[2:].add_(x[2:] * 2)
    return y * x


def inplace_chain(lib, x, w, kw):
    y = x.clone()
    y.add_(w).mul_(2).sigmoid_()
    z = y * 1
    z[0].tanh_()
    return z


SCENARIOS = [
    basic_setitem,
    advanced_setitem,
    masked_setitem,
    view_mul_,
    view_of_view,
    base_changed_after_view,
    sibling_view_changed,
    inplace_into_plain_tensor,
    inplace_chain,
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_inplace_through_views_matches_pytorch(scenario, device):
    results = []
    for lib in (ember, torch):
        x, w, kw = _start(lib, device)
        out = scenario(lib, x, w, kw)
        g = np.random.default_rng(1).standard_normal(tuple(out.shape))
        out.backward(lib.tensor(g, **kw))
        results.append([out.detach().cpu().numpy(), x.grad, w.grad])
    (out_e, xg_e, wg_e), (out_t, xg_t, wg_t) = results
    np.testing.assert_allclose(out_e, out_t, rtol=1e-12, err_msg="values")
    for name, got, want in (("x", xg_e, xg_t), ("w", wg_e, wg_t)):
        assert (got is None) == (want is None), f"{name}.grad: ember {got}, torch {want}"
        if got is not None:
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), err_msg=f"{name}.grad")


def test_grad_fn_names_after_inplace(device):
    for lib in (ember, torch):
        x = _start(lib, device)[0]
        y = x * 1
        v = y[0]
        column = y[:, 0]
        v.mul_(2)
        names = [t.grad_fn.name() for t in (y, v, column)]
        expected = ["torch::autograd::CopySlices", "AsStridedBackward0", "AsStridedBackward0"]
        assert names == expected, lib.__name__
        assert repr(y.grad_fn).startswith("<CopySlices object at"), lib.__name__


@pytest.mark.parametrize(
    "write, message",
    [
        (lambda x: x.add_(1), "a leaf Variable that requires grad is being used in an in-place"),
        (lambda x: x[0].mul_(2), "a view of a leaf Variable that requires grad"),
        (lambda x: x.__setitem__(0, 1.0), "a view of a leaf Variable that requires grad"),
    ],
)
def test_inplace_on_leaf_is_an_error(device, write, message):
    x, _, _ = _start(ember, device)
    with pytest.raises(RuntimeError, match=message):
        write(x)
    with ember.no_grad():
        write(x)  # allowed when not recording (optimizer updates)


def test_detach_shares_memory_and_version(device):
    x, _, _ = _start(ember, device)
    y = x.exp()
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d[0, 0] = 100.0
    assert y[0, 0].item() == 100.0  # same memory
    with pytest.raises(RuntimeError, match=r"ExpBackward0, is at version 1; expected version 0"):
        y.sum().backward()


def test_detach_inplace(device):
    x, _, _ = _start(ember, device)
    y = x * 2
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None and y.is_leaf
    z = x * 2
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        z[0].detach_()


def test_detach_inplace_resets_the_output_number_as_pytorch():
    """A multi-output node's second output, detached in place, is output 0 of nothing (what
    lets the recorders take a tensor without grad_fn as a fresh output)."""
    seen = []
    for lib in (ember, torch):
        a = lib.tensor(np.arange(16.0).reshape(4, 4) + np.eye(4), requires_grad=True)
        _, r = lib.linalg.qr(a * 1)
        before = r.output_nr
        r.detach_()
        r.requires_grad_()
        (r * 2).sum().backward()
        seen.append((before, r.output_nr, r.is_leaf, r.grad.tolist()))
    assert seen[0] == seen[1] and seen[0][:3] == (1, 0, True)


@pytest.mark.parametrize(
    "build, node",
    [
        (lambda x: (x.exp(), lambda y: y.add_(1)), "ExpBackward0"),  # a saved output
        (lambda x: (x * 1, lambda y: None), None),
        (lambda x: ((x * 1).sin(), lambda y: None), None),
    ],
)
def test_modified_saved_tensor_error_names_node_and_versions(device, build, node):
    x, _, _ = _start(ember, device)
    y, modify = build(x)
    modify(y)
    if node is None:
        y.sum().backward()  # nothing saved was modified
        return
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    message = str(info.value)
    assert "modified by an inplace operation" in message
    assert f"saved by {node}, is at version 1; expected version 0" in message


def test_modified_saved_input_error(device):
    x, _, _ = _start(ember, device)
    h = x * 1
    y = h.sin()  # saves h
    h[0, 0] = 5.0
    with pytest.raises(RuntimeError, match=r"saved by SinBackward0, is at version 1; expected"):
        y.sum().backward()
