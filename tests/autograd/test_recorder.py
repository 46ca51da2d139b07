"""The generated recorders (autograd/recorder.py) against the layer's general path and PyTorch:
the same graph (node names, next_functions, saved values), the same gradients, grad mode,
saved-tensor hooks, anomaly mode and argument errors on the operators' direct path."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd.layer import LAYER
from ember.dispatcher.layers import STACK, Layer, installed
from ember.dispatcher.optable import OPS

from .oracle import host, leaves, torch


def _values(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 4)) + 2.0, rng.standard_normal((3, 4)) + 2.0]


def _program(lib, a, b):
    """Operators (binary, reflected, scalar, unary), one-tensor functions and methods, a view,
    a reduction with several outputs, ops that save their result or one input for the other."""
    t = a + b
    t = t * a
    t = 2.0 - t
    t = -t
    t = lib.exp(t * 0.01)
    t = t.tanh()
    t = t / b
    t = abs(t)
    m = t.t()
    values, _ = lib.max(m, 1)
    return (values.sum() + (a * 3.0).sum(),)


def _graph(out) -> list:
    """Node names, walked through next_functions (the graph API the recorders must keep)."""
    names, seen, todo = [], set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name().rpartition("::")[2])
        todo.extend(edge[0] for edge in node.next_functions)
    return sorted(names)


def test_operators_record_through_the_recorder():
    assert STACK.direct_layers is STACK.layers == (LAYER,)
    assert OPS["add"].recorder is not None and OPS["tanh"].recorder is not None
    (a, b), _ = leaves(_values(), "cpu")
    out = a + b
    # the first recorded call wrote the recorder: a function of its own, not the first-call stub
    assert OPS["add"].recorder.__qualname__ == "record_add"
    assert out.grad_fn.name() == "AddBackward0"


def test_values_gradients_and_graph_match_pytorch():
    ours, theirs = leaves(_values(), "cpu")
    (mine,) = _program(ember, *ours)
    (ref,) = _program(torch, *theirs)
    assert _graph(mine) == sorted(n.rpartition("::")[2] for n in _torch_names(ref.grad_fn))
    mine.backward()
    ref.backward()
    np.testing.assert_allclose(host(mine), host(ref), rtol=1e-12)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(host(x.grad), host(y.grad), rtol=1e-10)


def _torch_names(root) -> list:
    names, seen, todo = [], set(), [root]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(node.name())
        todo.extend(edge[0] for edge in node.next_functions)
    return names


def test_recorder_and_general_path_build_the_same_node():
    (a, b), _ = leaves(_values(), "cpu")
    for name, args in (("mul", (a, b)), ("mul", (a, 2.5)), ("exp", (a,)), ("t", (a,))):
        op = OPS[name]
        direct = LAYER.handle(op, args)
        general = LAYER.handle_general(op, args)
        assert op.recorder is not None
        d, g = direct.grad_fn, general.grad_fn
        assert d.name() == g.name()
        assert d.next_functions == g.next_functions
        assert d.input_meta == tuple(g.input_meta)
        assert d.ctx.needs_input_grad == g.ctx.needs_input_grad
        assert tuple(d.ctx._values) == tuple(g.ctx._values)
        assert sorted(d.ctx._saved or {}) == sorted(g.ctx._saved or {})
        assert direct._base is general._base or (direct._base is a and general._base is a)


def test_saved_values_as_pytorch_shows_them():
    (a, b), (ta, tb) = leaves(_values(), "cpu")
    ours, theirs = a * b, ta * tb
    np.testing.assert_array_equal(host(ours.grad_fn._saved_self), host(theirs.grad_fn._saved_self))
    np.testing.assert_array_equal(
        host(ours.grad_fn._saved_other), host(theirs.grad_fn._saved_other)
    )
    # a Python number is saved as PyTorch wraps it: a 0-dim tensor of the input's dtype
    scalar, reference = (a * 2.5).grad_fn._saved_other, (ta * 2.5).grad_fn._saved_other
    assert str(scalar.dtype).rpartition(".")[2] == str(reference.dtype).rpartition(".")[2]
    np.testing.assert_array_equal(host(scalar), host(reference))
    # mul keeps self only for other's gradient: a constant other needs none (PyTorch's None)
    (c,), (tc,) = leaves(_values()[:1], "cpu", requires_grad=False)
    assert (a * c).grad_fn._saved_self is None
    assert (ta * tc).grad_fn._saved_self is None
    np.testing.assert_array_equal(host((a * c).grad_fn._saved_other), host(c))


def test_grad_mode_off_on_the_direct_path():
    (a, b), _ = leaves(_values(), "cpu")
    with ember.no_grad():
        for out in (a + b, -a, a.exp(), ember.tanh(a), a * 2.0):
            assert out.grad_fn is None and not out.requires_grad
    assert (a + b).requires_grad


def test_saved_tensor_hooks_and_version_checks():
    (a, b), _ = leaves(_values(), "cpu")
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = (a * b).exp()
    assert len(packed) == 3  # mul's two inputs, exp's result
    out.sum().backward()
    np.testing.assert_allclose(host(a.grad), host((a * b).exp() * b), rtol=1e-12)

    x = a.detach().clone().requires_grad_(True)
    y = x * 1.0
    z = y * y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_anomaly_mode_traces_the_node():
    (a, b), _ = leaves(_values(), "cpu")
    with ember.autograd.detect_anomaly():
        out = a + b
    assert out.grad_fn.trace is not None
    assert (a + b).grad_fn.trace is None


def test_another_layer_turns_the_direct_path_off():
    class Counting(Layer):
        name = "counting"
        priority = 55
        grad_only = True
        calls = 0

        def wants(self, op, args):
            return True

        def handle(self, op, args):
            Counting.calls += 1
            return op.redispatch(self, args)

    (a, b), _ = leaves(_values(), "cpu")
    with installed(Counting()):
        assert STACK.direct_layers is None
        out = a + b  # autograd's recorder via handle, then the layer below it
    assert Counting.calls == 1
    assert out.grad_fn.name() == "AddBackward0"
    out.sum().backward()
    np.testing.assert_array_equal(host(a.grad), np.ones((3, 4)))
    assert STACK.direct_layers is STACK.layers


def test_argument_errors_as_pytorch():
    (a, _), (ta, _) = leaves(_values(), "cpu")
    with pytest.raises(TypeError) as ours:
        ember.add(a, [1, 2])
    with pytest.raises(TypeError) as theirs:
        torch.add(ta, [1, 2])
    assert "argument 'other'" in str(ours.value) and "argument 'other'" in str(theirs.value)


@pytest.mark.parametrize("name", ["add_", "reshape", "cat", "copy_"])
def test_general_path_keeps_the_ops_it_owns(name):
    assert OPS[name].recorder is None


def test_grad_mode_is_per_thread_on_the_direct_path():
    """The recorders read the calling thread's modes: a thread under no_grad records nothing
    while another records, and the other way round."""
    import threading

    (a, b), _ = leaves(_values(), "cpu")
    seen = {}

    def worker(name, off):
        with ember.no_grad() if off else ember.enable_grad():
            ready.wait()
            seen[name] = (a + b).requires_grad, (a * b).grad_fn is not None, a.exp().requires_grad

    for main_off in (True, False):
        ready = threading.Barrier(2)
        thread = threading.Thread(target=worker, args=("worker", not main_off))
        thread.start()
        with ember.no_grad() if main_off else ember.enable_grad():
            ready.wait()
            seen["main"] = (a + b).requires_grad, (a * b).grad_fn is not None, a.exp().requires_grad
        thread.join()
        assert seen == {"main": (not main_off,) * 3, "worker": (main_off,) * 3}


def test_node_is_its_own_ctx():
    (a, b), (ta, tb) = leaves(_values(), "cpu")
    node = (a * b).grad_fn
    assert node.ctx is node
    assert node.needs_input_grad == (True, True)
    (c,), _ = leaves(_values()[:1], "cpu", requires_grad=False)
    assert (a * c).grad_fn.needs_input_grad == (True, False)
    assert (2.0 * a).grad_fn.needs_input_grad == (True, False)
    # hooks, traces and the released flag are per node although their defaults are shared
    first, second = (a + b).grad_fn, (a + b).grad_fn
    first.register_hook(lambda grads_in, grads_out: None)
    assert first.hooks and second.hooks is None
    out, ref = a * b, ta * tb
    out.sum().backward()
    ref.sum().backward()
    assert out.grad_fn.released and not (a * b).grad_fn.released
    for loss in (out.sum(), ref.sum()):  # mul saved its inputs, freed by the first backward
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()


def test_a_leaf_keeps_one_accumulator_in_its_slot():
    """A leaf's edge is made by its first recorded call and kept in its ``_leaf_edge`` slot (not
    its ``__dict__``): every path that records on it (recorders, the general path) shares the
    one AccumulateGrad, and copies of the tensor (as_subclass, swap_tensors) never take it."""
    (a, b), _ = leaves(_values(), "cpu")
    assert not hasattr(a, "_leaf_edge")  # unset until recorded
    first = (a + b).grad_fn.next_functions[0][0]
    general = LAYER.handle_general(OPS["mul"], (a, b)).grad_fn.next_functions[0][0]
    assert first is general is (a * 2.0).grad_fn.next_functions[0][0]
    assert first.variable is a and a._leaf_edge == (first, 0)
    assert "_leaf_edge" not in a.__dict__

    class Marked(ember.Tensor):
        pass

    view = a.detach().as_subclass(Marked)
    assert type(view) is Marked and not hasattr(view, "_leaf_edge")
    c, d = ember.ones(2), ember.zeros(3)
    ember.utils.swap_tensors(c, d)
    assert c.shape == (3,) and not hasattr(c, "_leaf_edge")
    (a * b).sum().backward()
    np.testing.assert_allclose(host(a.grad), host(b))
