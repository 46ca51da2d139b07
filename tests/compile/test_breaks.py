"""Constructs a graph cannot hold: the call still gives eager's result (computed once), the
reason is in explain(), and fullgraph=True raises Unsupported naming the construct."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember._dynamo.exc import Unsupported


def _item(x):
    return x * x.sum().item()


def _tolist(x):
    return x + len(x.tolist())


def _branch(x):
    y = x.cos()
    if y.sum() > 0:
        y = y + 1
    return y.relu()


def _print(x):
    y = x.exp()
    print(y)
    return y * 2


def _numpy(x):
    return x + float(x.numpy().max())


def _int(x):
    return x * int(x.sum())


def _backward(x):
    w = x.detach().requires_grad_()
    loss = (w * w).sum()
    loss.backward()
    return w.grad * 2


def _step(x):
    p = nn.Parameter(x.detach().clone())
    opt = ember.optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    return p.detach() + 1


CASES = {
    "item": (_item, "Unsupported Tensor.item() call"),
    "tolist": (_tolist, "Unsupported Tensor.tolist() call"),
    "branch": (_branch, "Data-dependent branching"),
    "print": (_print, "Failed to trace builtin operator"),
    "numpy": (_numpy, "Unsupported Tensor.numpy() call"),
    "int": (_int, "Unsupported Tensor conversion to int"),
    "backward": (_backward, "Unsupported Tensor.backward() call"),
    "optimizer": (_step, "Unsupported Tensor.backward() call"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_break_runs_eagerly_with_reason(name, capsys):
    fn, title = CASES[name]
    x = ember.randn(4)
    compiled = ember.compile(fn)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-6)
    entry = next(iter(compiled._cache.values()))[0]
    assert entry.region is None and title in entry.reasons[0].reason
    explained = ember._dynamo.explain(fn)(x)
    assert explained.graph_break_count >= 1
    assert explained.break_reasons[0].reason.startswith(title)
    assert fn.__name__ in explained.break_reasons[0].reason  # the user's frame


@pytest.mark.parametrize("name", list(CASES))
def test_fullgraph_raises_naming_the_construct(name, capsys):
    fn, title = CASES[name]
    with pytest.raises(Unsupported) as info:
        ember.compile(fn, fullgraph=True)(ember.randn(4))
    assert info.value.gb_type == title
    assert str(info.value).startswith(title)
    assert "from user code:" in str(info.value) and fn.__name__ in str(info.value)


def test_optimizer_step_before_the_forward_is_no_break():
    """As PyTorch's dynamo traces a step into the graph: a step before the forward's first op
    is replayed before the forward (train_region.py), not a break."""
    p = nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1)
    p.grad = ember.ones(3)

    def step(x):
        opt.step()
        return x + p

    explained = ember._dynamo.explain(step)(ember.zeros(3))
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = ember.compile(step, fullgraph=True)
    for i in range(2, 5):
        np.testing.assert_allclose(compiled(ember.zeros(3)).detach().numpy(), 1 - 0.1 * i, 1e-6)


def test_ops_after_backward_keep_the_backward_a_break():
    """A step after ``loss.backward()`` is kept, but an op after them makes the backward the
    break (reported at the backward's line)."""
    p = nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1)

    def step(x):
        (x * p).sum().backward()
        opt.step()
        return p.detach() + 1

    with pytest.raises(Unsupported, match="backward") as info:
        ember.compile(step, fullgraph=True)(ember.ones(3))
    assert ".backward()" in str(info.value).split("from user code:")[1]


def test_side_effects_before_a_break_happen_once():
    counter = ember.zeros(1)

    def f(x):
        counter.add_(1)  # an in-place update, then a break
        return x * x.sum().item()

    compiled = ember.compile(f)
    for _ in range(3):
        compiled(ember.randn(2))
    assert counter.item() == 3


def _torch_branch(x):
    y = x.cos()
    if y.sum() > 0:
        y = y + 1
    return y.relu()


def _torch_print(x):
    y = x.exp()
    print(y)
    return y * 2


@pytest.mark.parametrize(
    "ours, theirs", [(_branch, _torch_branch), (_print, _torch_print)], ids=["branch", "print"]
)
def test_explain_counts_match_torch(ours, theirs, capsys):
    expected = torch._dynamo.explain(theirs)(torch.ones(4))
    got = ember._dynamo.explain(ours)(ember.ones(4))
    assert got.graph_count == expected.graph_count
    assert got.graph_break_count == expected.graph_break_count
    assert len(got.ops_per_graph) == len(expected.ops_per_graph)
    assert "Graph Count: 2" in str(got) and "Break Reason 1:" in str(got)


def test_explain_without_breaks():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    explained = ember._dynamo.explain(model)(ember.randn(2, 3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    assert explained.ops_per_graph == [["ember::linear", "ember::relu"]]
    assert explained.op_count == 2 and len(explained.graphs) == 1


class _Noisy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # a data-dependent branch: this module cannot be one graph
            return x * 2
        return x - 1


def test_module_break_runs_compiled_segments_around_it():
    """Parameters that require grad included: the segments run as autograd nodes
    (tests/compile/test_segments_grad.py checks the gradients)."""
    model = nn.Sequential(nn.Linear(4, 4), _Noisy(), nn.Sequential(nn.Linear(4, 4), nn.Tanh()))
    compiled = ember.compile(model)
    for _ in range(4):
        x = ember.randn(2, 4)
        np.testing.assert_allclose(
            compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6
        )
    (entry,) = [e for es in compiled._compiled._cache.values() for e in es]
    assert entry.region is None and entry.paths.replays >= 2
