"""The dispatch layer stack: layers wrap op calls, highest priority first, and continue below
themselves with ``op.redispatch``."""

from __future__ import annotations

import pytest

import ember
from ember.dispatcher import layers
from ember.dispatcher.layers import STACK, Layer


class Recorder(Layer):
    """Records ``name:op`` into ``log`` for the ops it wants, then continues below itself."""

    def __init__(self, name: str, priority: int, log: list, only=None):
        self.name = name
        self.priority = priority
        self.log = log
        self.only = only

    def wants(self, op, args) -> bool:
        return self.only is None or op.name in self.only

    def handle(self, op, args):
        self.log.append(f"{self.name}:{op.name}")
        return op.redispatch(self, args)


@pytest.fixture(autouse=True)
def before():
    """The layers ember installs itself (autograd...); tests add theirs above them."""
    layers_before = STACK.layers
    yield layers_before
    STACK.replace(layers_before)


def test_layer_wraps_every_call(before):
    log: list = []
    x = ember.ones(3)
    with layers.installed(Recorder("rec", 1000, log)) as layer:
        assert STACK.layers == (layer, *before)
        y = x + 1
        z = ember.zeros(2)
    assert log == ["rec:add", "rec:full", "rec:fill_"]  # ops a runner calls are dispatched too
    assert y.tolist() == [2.0, 2.0, 2.0] and z.tolist() == [0.0, 0.0]


def test_layers_run_highest_priority_first(before):
    log: list = []
    low, high = Recorder("low", 1001, log), Recorder("high", 1002, log)
    with layers.installed(low), layers.installed(high):
        assert STACK.layers == (high, low, *before)
        ember.ones(2).neg()
    assert log[-2:] == ["high:neg", "low:neg"]
    log.clear()
    with layers.installed(high), layers.installed(low):  # installation order does not matter
        ember.ones(2).neg()
    assert log[-2:] == ["high:neg", "low:neg"]


def test_layer_that_wants_only_some_ops():
    log: list = []
    picky = Recorder("picky", 1002, log, only={"mul"})
    every = Recorder("every", 1001, log)
    x = ember.ones(2)
    with layers.installed(picky), layers.installed(every):
        (x * 3 + 1).exp()
    assert log == ["picky:mul", "every:mul", "every:add", "every:exp"]


def test_layer_may_change_arguments_and_results():
    class Doubler(Layer):
        name = "doubler"
        priority = 1000

        def wants(self, op, args):
            return op.name == "add"

        def handle(self, op, args):
            return op.redispatch(self, (args[0], args[1] * 2)) * 10

    with layers.installed(Doubler()):
        assert (ember.ones(2) + 1).tolist() == [30.0, 30.0]  # (1 + 2) * 10, mul not wrapped
    assert (ember.ones(2) + 1).tolist() == [2.0, 2.0]


def test_removal_restores_the_plain_path(before):
    log: list = []
    layer = Recorder("rec", 1000, log)
    with pytest.raises(ZeroDivisionError), layers.installed(layer):
        ember.ones(1) + 1
        raise ZeroDivisionError  # the layer goes even when the block fails
    assert STACK.layers == before
    assert not STACK.installed(layer)
    ember.ones(1) + 1
    assert log == ["rec:full", "rec:fill_", "rec:add"]


def test_install_and_remove_directly(before):
    layer = Recorder("rec", 1000, [])
    STACK.install(layer)
    STACK.install(layer)  # installing twice is a no-op
    assert STACK.layers == (layer, *before)
    STACK.remove(layer)
    STACK.remove(layer)
    assert STACK.layers == before


def test_nested_installed_keeps_an_outer_installation():
    layer = Recorder("rec", 1000, [])
    with layers.installed(layer):
        with layers.installed(layer):
            pass
        assert STACK.installed(layer)  # the inner block did not install it, so it leaves it
    assert not STACK.installed(layer)


def test_equal_priorities_are_refused(before):
    first, second = Recorder("first", 1000, []), Recorder("second", 1000, [])
    with layers.installed(first):
        with pytest.raises(ValueError, match=r"second.*same priority as.*first"):
            STACK.install(second)
        assert STACK.layers == (first, *before)


def test_redispatch_from_the_lowest_layer_reaches_the_backend():
    op = ember.ops.add
    layer = Recorder("rec", 1000, [])
    with layers.installed(layer):
        out = op.redispatch(layer, (ember.ones(1), 2))
    assert out.tolist() == [3.0]
    assert layer.log == ["rec:full", "rec:fill_"]  # the add itself skipped the layer


def test_layer_repr():
    assert repr(Recorder("rec", 7, [])) == "<layer rec priority=7>"


class GradOnlyRecorder(Recorder):
    grad_only = True

    def wants(self, op, args) -> bool:
        return any(isinstance(a, ember.Tensor) and a.requires_grad for a in args)


def test_operators_skip_the_stack_only_while_every_layer_is_grad_only(before):
    """``a + b`` goes straight to the Backend layer when no operand requires grad and every
    installed layer says it wants nothing else (dispatcher/layers.py); any other layer sees it."""
    log: list = []
    x, w = ember.ones(3), ember.ones(3, requires_grad=True)
    with layers.installed(GradOnlyRecorder("grad", 1003, log)):
        assert STACK.grad_only_layers is STACK.layers
        x + x, -x, x.exp(), ember.exp(x)
        assert log == []
        x + w
        assert log == ["grad:add"]
        with layers.installed(Recorder("all", 1004, log)):
            assert STACK.grad_only_layers is None
            x * 2.0, ember.exp(x)
    assert log[1:] == ["all:mul", "all:exp"]
    assert STACK.grad_only_layers is STACK.layers
    STACK.layers = tuple(list(before))  # assigned directly: not known to be grad-only
    assert STACK.grad_only_layers is not STACK.layers
    x + x
    STACK.replace(before)
    assert STACK.grad_only_layers is STACK.layers
