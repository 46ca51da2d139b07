"""compiler/module_probe.py: the generated checks on a capture's modules hold while nothing
changed and fail, naming the change, for each kind of change a replay must not miss."""

from __future__ import annotations

import math

import pytest

import ember
from ember import nn
from ember.compiler.module_probe import ModuleProbe


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 3), nn.GELU(), nn.Linear(3, 2))
        self.register_buffer("shift", ember.zeros(2))
        self.register_buffer("absent", None)
        self.scale = 2.0
        self.fn = math.sqrt

    def forward(self, x):
        return self.body(x) * self.scale + self.shift


def _swap_children(net):
    kids = net.body._modules
    first, last = kids["0"], kids["2"]
    kids["0"], kids["2"] = last, first


# (change, what failure() names)
CHANGES = {
    "scalar": (lambda n: setattr(n, "scale", 3.0), "_Net.scale changed (guarded: 2.0)"),
    "flag": (lambda n: n.eval(), "changed (guarded: True)"),
    "new-attribute": (lambda n: setattr(n, "extra", 1), "_Net: its attributes changed"),
    "function": (lambda n: setattr(n, "fn", math.exp), "_Net.fn changed (guarded by identity)"),
    "submodule": (lambda n: setattr(n.body, "1", nn.ReLU()), "Sequential.1 changed"),
    "children-order": (_swap_children, "Sequential.0 changed (guarded by identity)"),
    "parameter": (
        lambda n: setattr(n.body[0], "weight", nn.Parameter(ember.ones(3, 3))),
        "Linear.weight changed (guarded by identity)",
    ),
    "registry-write": (
        lambda n: n.body[2]._parameters.__setitem__("bias", nn.Parameter(ember.ones(2))),
        "Linear.bias changed (guarded by identity)",
    ),
    "data-shape": (
        lambda n: setattr(n.body[2].weight, "data", ember.ones(4, 3)),
        "Linear.weight changed (guarded: size [2, 3], ember.float32, cpu)",
    ),
    "dtype": (lambda n: n.double(), "_Net.shift changed (guarded by identity)"),  # buffers: new
    "parameter-dtype": (
        lambda n: n.body[0].double(),
        "Linear.weight changed (guarded: size [3, 3], ember.float32, cpu)",
    ),
    "none-filled": (
        lambda n: n._buffers.__setitem__("absent", ember.ones(1)),
        "_Net.absent changed (guarded by identity)",
    ),
    "buffer-added": (
        lambda n: n.body[1].register_buffer("b", ember.ones(1)),
        "GELU: its parameters or buffers changed (guarded: 0 of them)",
    ),
    "scalar-now-tensor": (
        lambda n: n.__dict__.__setitem__("scale", ember.ones(3)),
        "_Net.scale changed (guarded: 2.0)",
    ),
    "deleted-and-added": (
        lambda n: (delattr(n, "fn"), setattr(n, "gn", math.exp)),
        "_Net.fn changed (guarded by identity)",
    ),
}


def _probe():
    net = _Net()
    return net, ModuleProbe(list(net.modules()))


def test_the_checks_hold_while_nothing_changed():
    net, probe = _probe()
    net(ember.ones(1, 3))  # a call changes nothing the probe guards
    assert probe() and probe()


@pytest.mark.parametrize("name", list(CHANGES))
def test_a_change_fails_the_checks_and_is_named(name):
    change, named = CHANGES[name]
    net, probe = _probe()
    change(net)
    assert not probe()
    assert named in probe.failure()


def test_a_nan_attribute_still_matches_itself():
    """Scalars compare as one tuple (identity first): a NaN attribute must not recompile on
    every call."""
    net = _Net()
    net.scale = float("nan")
    assert ModuleProbe([net])()


def test_no_modules_always_match():
    assert ModuleProbe([])()


def test_a_compiled_model_recompiles_on_a_registry_write():
    """End to end: a Parameter written straight into ``_parameters`` (as parametrize-style
    code does) reaches the replay, which holds the captured tensors."""
    net = _Net()
    compiled = ember.compile(net)
    x = ember.ones(1, 3)
    compiled(x)
    net.body[2]._parameters["bias"] = nn.Parameter(ember.full((2,), 5.0))
    want = net(x)
    ember.testing.assert_close(compiled(x), want)
