"""max_pool2d's ``_saved_self`` and index_add's ``_saved_source``: PyTorch's nodes keep those
inputs, ember's formulas need only their shapes, so ember's nodes hold them weakly
(autograd/saved_weak.py). Read while their memory lives, they are PyTorch's values with PyTorch's
history; the graph's saved bytes do not grow; once freed, reading says why."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import ember

from ..saved_graph import saved_bytes


def _leaves(lib):
    r = np.random.RandomState(0)
    m = lib.tensor(r.randn(2, 3, 4, 4), dtype=lib.float64, requires_grad=True)
    x = lib.tensor(r.randn(5), dtype=lib.float64, requires_grad=True)
    return m, x


def _pool_of_relu(lib, m, x):
    # conv-relu-pool: relu keeps its output, which is the pool's input
    return lib.nn.functional.max_pool2d(lib.relu(m * 2), 2)


def _index_add(lib, m, x):
    return x.index_add(0, lib.tensor([1, 3]), (x * 3).exp()[:2])


CASES = {
    "max_pool2d of relu": (_pool_of_relu, "_saved_self"),
    "max_pool2d of leaf": (lambda lib, m, x: lib.nn.functional.max_pool2d(m, 2), "_saved_self"),
    "index_add of slice": (
        lambda lib, m, x: x.index_add(0, lib.tensor([0]), x[1:2]),
        "_saved_source",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_weak_input_reads_as_torch(name):
    build, attribute = CASES[name]
    held, theirs_held = _leaves(ember), _leaves(torch)
    ours, theirs = build(ember, *held), build(torch, *theirs_held)
    gc.collect()
    got, want = getattr(ours.grad_fn, attribute), getattr(theirs.grad_fn, attribute)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    assert got.dtype == ember.float64 and got.requires_grad == want.requires_grad
    want_fn = None if want.grad_fn is None else want.grad_fn.name()
    assert (None if got.grad_fn is None else got.grad_fn.name()) == want_fn


def test_index_add_source_read_from_live_memory():
    """The source's tensor object is gone, its memory held by exp's saved output: the alias
    read back has the source's history (its grad_fn) as PyTorch's saved source has."""
    held, theirs_held = _leaves(ember), _leaves(torch)
    ours, theirs = _index_add(ember, *held), _index_add(torch, *theirs_held)
    gc.collect()
    got, want = ours.grad_fn._saved_source, theirs.grad_fn._saved_source
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-15)
    assert got.grad_fn.name() == want.grad_fn.name() == "SliceBackward0"


def test_pool_input_is_not_kept():
    """A pool over a tensor nothing else saves (conv-pool, here mul-pool): PyTorch's graph keeps
    it, ember's does not, and reading the input afterwards says it is gone."""
    m, _ = _leaves(ember)
    y = m * 2
    memory = weakref.ref(y.untyped_storage())
    out = ember.nn.functional.max_pool2d(y, 2)
    t_m, _ = _leaves(torch)
    t_y = t_m * 2
    t_out = torch.nn.functional.max_pool2d(t_y, 2)
    # PyTorch's graph keeps the input and the indices; ember's the indices (and the output,
    # alive anyway), not the input
    assert saved_bytes(t_out) >= t_y.numel() * 8 + out.numel() * 8
    assert saved_bytes(out) < t_y.numel() * 8
    del y
    gc.collect()
    assert memory() is None
    with pytest.raises(RuntimeError, match="does not keep its input 'self' alive"):
        getattr(out.grad_fn, "_saved_self")  # noqa: B009 - the read is what is tested


def _error(lib, case):
    m, x = _leaves(lib)
    try:
        case(lib, m, x)
    except RuntimeError as error:
        return str(error).split(":")[0]
    return None


def _modified(lib, m, x):
    source = x * 3
    out = x.index_add(0, lib.tensor([0]), source[:1])
    source.mul_(2)
    return out.grad_fn._saved_source


def _freed(lib, m, x):
    out = lib.nn.functional.max_pool2d(m, 2)
    out.sum().backward()
    return out.grad_fn._saved_self


@pytest.mark.parametrize("case", [_modified, _freed], ids=["modified in place", "after backward"])
def test_weak_input_errors_as_torch(case):
    expected = _error(torch, case)
    assert expected is not None
    assert _error(ember, case) == expected


def test_backward_unchanged():
    held, theirs_held = _leaves(ember), _leaves(torch)
    for build in (_pool_of_relu, _index_add):
        build(ember, *held).sum().backward()
        build(torch, *theirs_held).sum().backward()
    for ours, theirs in zip(held, theirs_held):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
