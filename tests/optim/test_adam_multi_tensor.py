"""Adam and AdamW with ``foreach`` left at None (the default) take the multi-tensor path: one
``_foreach_add_`` of the step counters and one ``_fused_adam_``/``_fused_adamw_`` call per
device and dtype, not 8 ops per parameter. Trajectories over 20 steps match PyTorch's default
(its per-tensor loop on the CPU) and ember's own ``foreach=False`` loop."""

from __future__ import annotations

import pytest
from test_optimizers import (
    SKIP_AT,
    Problem,
    _assert_trajectory,
    _ember_grad,
    _run,
    trajectory_against_torch,
)

import ember
from ember.dispatcher.optable import OPS

torch = pytest.importorskip("torch")

STEPS = 20
CONFIGS = [
    ("Adam", {}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-3, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
]


def _id(config) -> str:
    name, kwargs = config
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.fixture
def op_calls(monkeypatch):
    """The names of the ops whose runners ran (the optimizer's step only)."""
    calls = []
    for op in OPS.values():
        runner = op.runner

        def counting(op, *args, _runner=runner):
            calls.append(op.name)
            return _runner(op, *args)

        monkeypatch.setattr(op, "runner", counting)
    return calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_default_matches_torch_default(config, dtype):
    problem, opt, ref, got = trajectory_against_torch(config, dtype, STEPS)
    name, kwargs = config
    loop = problem.ember_params()
    opt_loop = getattr(ember.optim, name)(loop, **kwargs, foreach=False)
    _assert_trajectory(got, _run(problem, opt_loop, loop, STEPS, _ember_grad, skip_at=SKIP_AT),
                       dtype)  # fmt: skip
    first = next(iter(opt.state.values()))["step"].item()
    assert first == next(iter(ref.state.values()))["step"].item()


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_default_step_is_two_calls(name, op_calls):
    problem = Problem("float32")
    params = problem.ember_params()
    opt = getattr(ember.optim, name)(params, lr=0.05, weight_decay=0.1)
    for p in params:
        p.grad = ember.ones_like(p)
    opt.step()  # the first step creates the state
    op_calls.clear()
    opt.step()
    fused = "_fused_adamw_" if name == "AdamW" else "_fused_adam_"
    assert op_calls == ["_foreach_add_", fused]
