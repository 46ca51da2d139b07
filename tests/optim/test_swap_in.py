"""optim.swap_in_optimizer_params_and_state as torch 2.13's: a step inside the block acts on the
swapped-in parameters and state (same values as torch's), the live optimizer and its
parameters are unchanged afterwards, and malformed states are refused with torch's messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _setup(lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    with lib.no_grad():
        for p, v in zip(model.parameters(), ([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], [0.1, -0.1])):
            p.copy_(lib.tensor(v))
    opt = lib.optim.Adam(model.parameters(), lr=0.1)
    model(lib.ones(1, 3)).sum().backward()
    opt.step()
    return model, opt


def _swap_and_step(lib):
    model, opt = _setup(lib)
    live = [p.detach().clone() for p in model.parameters()]
    params = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    for p in params.values():
        p.grad = lib.ones_like(p)
    state = opt.state_dict()
    with lib.optim.swap_in_optimizer_params_and_state(opt, params, state):
        opt.step()
    for before, p in zip(live, model.parameters(), strict=True):
        assert bool((before == p.detach()).all())  # the live parameters did not move
    assert all(isinstance(k, lib.nn.Parameter) for k in opt.state)  # live state restored
    return [p.detach().numpy() for p in params.values()], state["state"][0]["exp_avg"].numpy()


def test_a_step_inside_moves_the_swapped_in_parameters_as_torch_does():
    ours, theirs = _swap_and_step(ember), _swap_and_step(torch)
    for a, b in zip(ours[0], theirs[0], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)  # in-place state edits stay


@pytest.mark.parametrize(
    "broken",
    [
        lambda s: {**s, "state": [1]},
        lambda s: {**s, "param_groups": s["param_groups"] * 2},
        lambda s: {**s, "state": {**s["state"], 7: {}}},
        lambda s: {**s, "param_groups": [{**s["param_groups"][0], "extra": 1}]},
    ],
    ids=["state-not-dict", "group-count", "extra-key", "group-keys"],
)
def test_malformed_states_are_refused_with_torch_messages(broken):
    messages = []
    for lib in (ember, torch):
        model, opt = _setup(lib)
        params = dict(model.named_parameters())
        swap = lib.optim.swap_in_optimizer_params_and_state
        with pytest.raises(RuntimeError) as error, swap(opt, params, broken(opt.state_dict())):
            pass
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_an_optimizer_without_state_is_refused():
    model = ember.nn.Linear(2, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    swap = ember.optim.swap_in_optimizer_params_and_state
    with (
        pytest.raises(RuntimeError, match="requires initialized optimizer state"),
        swap(opt, {}, opt.state_dict()),
    ):
        pass
