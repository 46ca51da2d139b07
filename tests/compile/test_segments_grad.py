"""Graph breaks with gradients (compiler/segments.py): a function or a module's forward with a
break, called with inputs or parameters that require grad, runs each segment's region as one
autograd node (its compiled forward/backward pair, compiler/joint.py) and the breaking piece
eagerly between them; ``backward()`` gives eager's and PyTorch's gradients."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.compiler import joint

from .test_breaks import _Noisy


def _fns(lib):
    """The same functions over ember or torch."""

    def item_if(x, w):
        h = (x @ w).tanh()
        if h.mean().item() > 0:  # data-dependent Python control flow
            h = h * 2 + x
        else:
            h = h.sigmoid() - x
        return (h * h).sum()

    def printed(x, w):
        h = (x @ w).relu() + x
        print("h", h.shape, h.sum())  # printing a tensor
        return (h.exp() * 0.5).mean()

    @lib.compiler.disable
    def opaque(h):  # a call the compiler does not look into (C code, another library)
        return h * float(np.linalg.norm(h.detach().cpu().numpy()))

    def unknown_call(x, w):
        h = (x @ w).sin() * 0.5
        h = opaque(h) + x
        return (h.cos() * w.sum()).sum()

    return {f.__name__: f for f in (item_if, printed, unknown_call)}


EMBER, TORCH = _fns(ember), _fns(torch)


def _entry(compiled):
    (entry,) = [e for es in compiled._cache.values() for e in es]
    return entry


def _segments(step, seen=None) -> list:
    """The compiled segments of a path trie."""
    found = [] if step.end is None else [step.end]
    for child in step.children.values():
        found += _segments(child)
    return found


def _pairs(compiled) -> int:
    """How many segments ran as a compiled forward/backward pair (one autograd node)."""
    return sum(
        isinstance(s.region.joint, joint.Joint) for s in _segments(_entry(compiled).paths.root)
    )


def _data(rng):
    x, w = rng.standard_normal((4, 6)), rng.standard_normal((6, 6)) * 0.5
    return x, w


def _grads(fn, lib, x, w):
    tx, tw = (lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in (x, w))
    loss = fn(tx, tw)
    loss.backward()
    return loss.item(), tx.grad.numpy(), tw.grad.numpy()


@pytest.mark.parametrize("name", list(EMBER))
def test_gradients_match_eager_and_torch(name, capsys):
    fn = EMBER[name]
    compiled = ember.compile(fn)
    rng = np.random.default_rng(0)
    for _ in range(6):  # capture, recordings of both branches, replays
        x, w = _data(rng)
        got = _grads(compiled, ember, x, w)
        eager = _grads(fn, ember, x, w)
        theirs = _grads(TORCH[name], torch, x, w)
        for a, b, c in zip(got, eager, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(a, c, rtol=1e-10, atol=1e-12)
    paths = _entry(compiled).paths
    assert paths.replays >= 4
    assert _pairs(compiled) >= 2  # the regions ran as autograd nodes, not op by op


def test_loss_is_a_compiled_node():
    compiled = ember.compile(EMBER["item_if"])
    x, w = (ember.tensor(a, requires_grad=True) for a in _data(np.random.default_rng(1)))
    for _ in range(3):  # the capture, the segments' recording, a replay
        loss = compiled(x, w)
    assert type(loss.grad_fn).__name__ == "CompiledFunctionBackward"
    assert not loss.is_leaf and loss.requires_grad


def test_in_place_on_a_leaf_raises_at_the_call():
    def f(x):
        y = x * x.sum().item()
        x.add_(1)  # eager autograd's error, at this line
        return y

    compiled = ember.compile(f)
    x = ember.ones(3, requires_grad=True)
    for _ in range(3):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            compiled(x)


def test_no_grad_and_grad_calls_share_nothing_wrong():
    """A guard set recorded without grad and one with: each path's outputs require grad as
    eager's do."""
    fn = EMBER["item_if"]
    compiled = ember.compile(fn)
    rng = np.random.default_rng(2)
    for i in range(6):
        x, w = (ember.tensor(a, requires_grad=True) for a in _data(rng))
        if i % 2:
            with ember.no_grad():
                out = compiled(x, w)
            assert not out.requires_grad
            np.testing.assert_allclose(out.item(), fn(x, w).item(), rtol=1e-12)
        else:
            assert compiled(x, w).requires_grad


def _models():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 4), torch.nn.Identity(), torch.nn.Linear(4, 4), torch.nn.Tanh()
    ).double()
    ours = nn.Sequential(nn.Linear(4, 4), _Noisy(), nn.Sequential(nn.Linear(4, 4), nn.Tanh()))
    ours.double()
    with ember.no_grad():
        for mine, source in ((ours[0], theirs[0]), (ours[2][0], theirs[2])):
            mine.weight.copy_(ember.tensor(source.weight.detach().numpy()))
            mine.bias.copy_(ember.tensor(source.bias.detach().numpy()))
    return ours, theirs


def test_module_with_a_break_in_forward_gets_eager_gradients():
    model, theirs = _models()
    compiled = ember.compile(copy.deepcopy(model))
    rng = np.random.default_rng(3)
    for _ in range(6):
        data = rng.standard_normal((3, 4))
        x = ember.tensor(data)
        for m in (model, compiled):
            m.zero_grad()
            (m(x) ** 2).sum().backward()
        theirs.zero_grad()
        t = theirs[0](torch.tensor(data))
        t = t * 2 if t.sum() > 0 else t - 1
        (theirs[3](theirs[2](t)) ** 2).sum().backward()
        ours = dict(model.named_parameters())
        for name, p in compiled._orig_mod.named_parameters():
            np.testing.assert_allclose(p.grad.numpy(), ours[name].grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(
            compiled._orig_mod[0].weight.grad.numpy(), theirs[0].weight.grad.numpy(), rtol=1e-10
        )
    assert _pairs(compiled._compiled) >= 2


class _Clipped(nn.Module):
    """An MLP whose forward reads a statistic as a Python number (a graph break)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 32), nn.Linear(32, 32), nn.Linear(32, 3)

    def forward(self, x):
        h = nn.functional.gelu(self.fc1(x))
        if h.abs().max().item() > 2.0:  # data-dependent: rescale large activations
            h = h * 0.5
        h = nn.functional.gelu(self.fc2(h)) + h
        return self.fc3(h)


def test_training_loss_curve_with_a_break_matches_eager():
    ember.manual_seed(0)
    model = _Clipped().double()
    compiled_model = copy.deepcopy(model)
    compiled = ember.compile(compiled_model)
    rng = np.random.default_rng(4)
    xs = ember.tensor(rng.standard_normal((64, 8)) * 2)
    ys = ember.tensor(rng.integers(0, 3, 64))
    curves = []
    for m, fwd in ((model, model), (compiled_model, compiled)):
        opt = ember.optim.Adam(m.parameters(), lr=1e-2)
        losses = []
        for step in range(50):
            batch = slice(16 * (step % 4), 16 * (step % 4 + 1))
            loss = nn.functional.cross_entropy(fwd(xs[batch]), ys[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        curves.append(losses)
    np.testing.assert_allclose(curves[1], curves[0], rtol=1e-10)
    assert curves[0][-1] < curves[0][0]
    assert _pairs(compiled._compiled) >= 2


def test_in_place_update_of_an_outside_tensor_happens_once_per_call():
    """Calls without grad record the update in a segment; calls with grad take it eagerly
    (the compiled pair's tracing run must not write it a second time): once per call in both,
    and eager's gradients."""
    counter = ember.zeros(1)

    def f(x):
        y = (x * 2).sum()
        if y.item() > 0:
            counter.add_(1)  # the first call of a segment, reading no tensor that needs grad
            y = y * 3
        return y

    compiled = ember.compile(f)
    x = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        for _ in range(3):
            compiled(x)
    for _ in range(3):
        compiled(x).backward()
    assert counter.item() == 6
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3 * 6.0))
