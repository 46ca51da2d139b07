"""Memory: saved tensors are freed by backward, graphs are freed by reference counting alone (no
reference cycles), and a training loop keeps a flat profile.

Measured with the CPU caching allocator's statistics, which see every request of at least
``cache_min_bytes`` (1 MiB): the tensors here are that large so that each one is counted.
"""

from __future__ import annotations

import contextlib
import gc
import weakref

import numpy as np
import pytest

import ember
from ember.autograd import Function
from ember.dispatcher.devices import REGISTRY

SHAPE = (256, 512)  # 1 MiB of float64: every such tensor goes through the caching allocator


@pytest.fixture
def allocated():
    """``allocated()`` -> bytes the CPU caching allocator has handed out and not got back."""
    backend = REGISTRY.backend("cpu")
    if SHAPE[0] * SHAPE[1] * 8 < backend.cache_min_bytes:
        pytest.skip("the test tensors are below the caching allocator's threshold")
    allocator = backend.allocator(None)
    gc.collect()  # what earlier tests left for the collector must not be freed mid-test
    return lambda: allocator.stats()["allocated_bytes.current"]


@contextlib.contextmanager
def gc_off():
    """Only reference counting frees objects inside: a cycle would keep them."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        y = x * x * x
        ctx.save_for_backward(x, y)  # saving an output: must not make a cycle through the node
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return 3 * g * y / x


def _param():
    values = np.random.default_rng(0).uniform(0.5, 1.5, SHAPE)
    return ember.tensor(values).requires_grad_()


def _graphs(w):
    """Forward computations over every kind of node, kept cheap for the 1,000-step loop:
    formulas saving inputs (mul) and outputs (relu), views, an in-place op on a view
    (CopySlices), a custom Function saving its output."""
    h = (w * 2).relu() * w
    v = h[:, : SHAPE[1] // 2]
    v.mul_(0.5)
    return (Cube.apply(h) + h.t().t()).sum()


def test_saved_tensors_are_freed_by_backward(allocated):
    w = _param()
    nbytes = w.nbytes
    base = allocated()
    loss = _graphs(w)
    assert allocated() - base >= 3 * nbytes  # intermediates are alive, held by the graph
    loss.backward()
    # What remains while `loss` and its graph are still referenced: the gradient only.
    assert allocated() - base == nbytes
    assert loss.grad_fn is not None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_retain_graph_keeps_saved_tensors_until_the_last_backward(allocated):
    w = _param()
    base = allocated()
    loss = _graphs(w)
    forward = allocated() - base
    loss.backward(retain_graph=True)
    assert allocated() - base == forward + w.nbytes  # saved tensors and the gradient
    loss.backward()
    assert allocated() - base == w.nbytes


@pytest.mark.parametrize("create_graph", [False, True])
def test_no_reference_cycles_keep_graphs_alive(allocated, create_graph):
    """With the garbage collector off, dropping the outputs frees every node and buffer."""
    w = _param()
    with gc_off():
        base = allocated()
        loss = _graphs(w)
        nodes = [weakref.ref(loss.grad_fn)]
        grads = ember.autograd.grad(loss, w, create_graph=create_graph)
        nodes.append(weakref.ref(grads[0].grad_fn) if create_graph else nodes[0])
        del loss, grads
        alive = [n() for n in nodes if n() is not None]
        assert not alive, f"nodes kept alive by a reference cycle: {alive}"
        assert allocated() == base


def test_no_reference_cycles_in_unused_graphs(allocated):
    w = _param()
    with gc_off():
        base = allocated()
        loss = _graphs(w)
        node = weakref.ref(loss.grad_fn)
        del loss
        assert node() is None
        assert allocated() == base


@pytest.mark.parametrize(
    "make",
    [
        lambda w: ember.cdist(w.t(), w.t()),  # a composite shown as CdistBackward0
        lambda w: w.std(0),
        lambda w: w.sort(1)[0],  # a table op's second output, read as _saved_indices
    ],
)
def test_saved_outputs_make_no_cycle(allocated, make):
    """The output a node shows as ``_saved_result`` (or ``_saved_indices``) does not keep the
    output object, nor through it the node: both go with the last reference to the output."""
    w = _param()
    with gc_off():
        base = allocated()
        y = make(w)
        node, out = weakref.ref(y.grad_fn), weakref.ref(y)
        name = "_saved_indices" if y.grad_fn.name() == "SortBackward0" else "_saved_result"
        assert getattr(y.grad_fn, name).shape == y.shape
        del y
        assert node() is None and out() is None
        assert allocated() == base


def test_training_loop_memory_is_flat(allocated):
    """1,000 forward/backward/update steps with the garbage collector off: the allocator's
    current bytes are the same after every step, and so is the number of Python objects."""
    w = _param()
    after, objects = [], []
    with gc_off():
        for step in range(1000):
            loss = _graphs(w)
            loss.backward()
            with ember.no_grad():
                w -= 1e-6 * w.grad
            w.grad = None
            del loss
            after.append(allocated())
            if step % 100 == 99:
                objects.append(len(gc.get_objects()))
    assert min(after) == max(after), f"allocated bytes moved: {sorted(set(after))}"
    assert objects[-1] <= objects[0], f"live objects grew: {objects}"
