"""Module backward hooks beyond the full ones of one module, against PyTorch: the deprecated
``register_backward_hook`` (on the output's last node, with PyTorch's FutureWarnings), the
global ``register_module_*backward*_hook`` tables, and the refusal to mix both kinds."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember


def _linear(lib):
    lib.manual_seed(0)
    layer = lib.nn.Linear(3, 2)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]]))
        layer.bias.copy_(lib.tensor([0.1, 0.2]))
    return layer


class _Twice:  # a module whose forward makes two nodes: the legacy hook sees the last one
    @staticmethod
    def make(lib):
        class Twice(lib.nn.Module):
            def forward(self, x):
                return x.relu() * 2

        return Twice()


def _shapes(grads):
    return [
        None if g is None else (tuple(g.shape), np.round(g.detach().numpy(), 5).tolist())
        for g in grads
    ]


@pytest.fixture(autouse=True)
def _fresh_global_kind():
    """Which kind the global table holds sticks (in PyTorch too): each test starts afresh."""
    yield
    ember.autograd.module_hooks.GLOBAL_IS_FULL[0] = None
    torch.nn.modules.module._global_is_full_backward_hook = None


def _legacy(lib, make, x_requires_grad=True):
    module = make(lib)
    log = []

    def hook(mod, grad_input, grad_output):
        assert mod is module
        log.append(("in", _shapes(grad_input), "out", _shapes(grad_output)))

    module.register_backward_hook(hook)
    x = lib.tensor([[1.0, -2.0, 3.0]], requires_grad=x_requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = module(x)
    log.append([str(w.message) for w in caught if w.category is FutureWarning])
    if y.requires_grad:
        (y * lib.tensor([[1.0, 2.0, 3.0]][0][: y.shape[-1]])).sum().backward()
    return log


@pytest.mark.parametrize("make", [_linear, _Twice.make], ids=["linear", "two nodes"])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_legacy_backward_hook_matches_torch(make, x_requires_grad):
    assert _legacy(ember, make, x_requires_grad) == _legacy(torch, make, x_requires_grad)


def test_mixing_hook_kinds_is_refused_as_torch():
    for lib in (ember, torch):
        layer = _linear(lib)
        layer.register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match=r"on a single Module\. Please use only one"):
            layer.register_backward_hook(lambda *a: None)
        other = _linear(lib)
        other.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match=r"on a single Module\. Please use only one"):
            other.register_full_backward_hook(lambda *a: None)


def _global_hooks(lib):
    module_api = lib.nn.modules.module
    net = lib.nn.Sequential(_linear(lib), lib.nn.Tanh())
    log = []
    net[0].register_full_backward_hook(lambda m, gi, go: log.append(("own", type(m).__name__)))
    handles = [
        module_api.register_module_full_backward_hook(
            lambda m, gi, go: log.append(("global", type(m).__name__, _shapes(gi)))
        ),
        module_api.register_module_full_backward_pre_hook(
            lambda m, go: log.append(("pre", type(m).__name__, _shapes(go)))
        ),
    ]
    try:
        net(lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)).sum().backward()
        with pytest.raises(RuntimeError, match=r"as a global Module hook\. Please use only one"):
            module_api.register_module_backward_hook(lambda *a: None)
    finally:
        for handle in handles:
            handle.remove()
    net(lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)).sum().backward()  # removed
    return log


def test_global_module_backward_hooks_match_torch():
    ours = _global_hooks(ember)
    assert ours == _global_hooks(torch)
    assert [entry[0] for entry in ours].count("global") == 3  # Sequential, Tanh, Linear


def test_global_legacy_hook_matches_torch():
    logs = []
    for lib in (ember, torch):
        module_api = lib.nn.modules.module
        log = []
        handle = module_api.register_module_backward_hook(
            lambda m, gi, go, log=log: log.append((type(m).__name__, _shapes(gi)))
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                layer = _linear(lib)
                layer(lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)).sum().backward()
                out = _linear(lib)(lib.tensor([[1.0, 2.0, 3.0]], requires_grad=True)).sum()
                with pytest.raises(RuntimeError, match="the hook of a dead Module"):
                    out.backward()  # the graph does not keep the module alive
        finally:
            handle.remove()
        logs.append(log)
    assert logs[0] == logs[1]
