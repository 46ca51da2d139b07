"""The optimizers of issue 15 against torch.optim: 20-step trajectories, state dicts, errors.

Reuses test_optimizers.py's problem (an elementwise quadratic with per-step noise, gradients
computed in numpy from each side's own parameters).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from test_optimizers import (
    Problem,
    _assert_trajectory,
    _config_id,
    _ember_grad,
    _run,
    _torch_state_to_ember,
)

import ember

torch = pytest.importorskip("torch")

STEPS = 20

CONFIGS = [
    ("NAdam", {}),
    ("NAdam", {"lr": 0.05, "betas": (0.8, 0.99), "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"lr": 0.05, "maximize": True, "eps": 1e-3, "foreach": False}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.05, "betas": (0.5, 0.9)}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.05, "maximize": True, "betas": (0.9, 0.8)}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.9), "eps": 1e-3}),
    ("Adamax", {"lr": 0.05, "weight_decay": 0.1, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "eps": 1e-4}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)}),
    ("Rprop", {"lr": 0.05, "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5}),
    ("ASGD", {"lr": 0.05, "t0": 3, "weight_decay": 0.1, "maximize": True}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "d": 2.0}),
    ("Adafactor", {"lr": 0.05, "eps": (1e-5, 1e-2), "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.05, "maximize": True}),
    # foreach: accepted and stored in the groups; the same trajectory as torch's foreach path.
    # (torch's differentiable=True refuses leaf parameters in step(), so it has no oracle here.)
    ("NAdam", {"lr": 0.05, "foreach": True}),
    ("RAdam", {"lr": 0.05, "foreach": True}),
    ("Adamax", {"lr": 0.05, "foreach": True}),
    ("Adadelta", {"foreach": True}),
    ("Rprop", {"lr": 0.05, "foreach": True}),
    ("ASGD", {"lr": 0.05, "t0": 5, "foreach": True}),
    ("Adafactor", {"lr": 0.05, "foreach": True}),
]


def _pair(name, kwargs, problem):
    ours, theirs = problem.ember_params(), problem.torch_params()
    opt = getattr(ember.optim, name)(ours, **kwargs)
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    return ours, theirs, opt, ref


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_config_id)
def test_trajectory_matches_torch(config, dtype):
    name, kwargs = config
    problem = Problem(dtype, seed=11)
    problem.noise = problem.noise * 2  # test_optimizers' Problem holds 2*10 steps of noise
    ours, theirs, opt, ref = _pair(name, kwargs, problem)
    skip_at = {3, 7, 15}  # some steps leave one parameter without a gradient
    got = _run(problem, opt, ours, STEPS, _ember_grad, skip_at=skip_at)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy, skip_at=skip_at)
    # float32 scalar state (NAdam's mu_product, ASGD's eta) rounds like torch's, but not
    # bit-for-bit where torch multiplies in float32: float64 gets float32-level slack there.
    _assert_trajectory(got, want, "float32" if name in ("NAdam", "ASGD") else dtype)
    assert set(opt.param_groups[0]) == set(ref.param_groups[0])


@pytest.mark.parametrize("config", CONFIGS[::2], ids=_config_id)
def test_state_dict_round_trip(config):
    name, kwargs = config
    half = STEPS // 2
    problem = Problem("float32", seed=12)
    problem.noise = problem.noise * 2
    ours, theirs, opt, ref = _pair(name, kwargs, problem)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy)
    _run(problem, opt, ours, half, _ember_grad)
    saved = opt.state_dict()
    mid_ref = getattr(torch.optim, name)(problem.torch_params(), **kwargs)
    for p in mid_ref.param_groups[0]["params"]:
        p.grad = torch.zeros_like(p)
    # The layout is torch's: same keys, same state fields (scalars as 0-d float32 tensors).
    assert set(saved["state"][0]) == set(ref.state_dict()["state"][0])
    for field, value in ref.state_dict()["state"][0].items():
        if isinstance(value, torch.Tensor):
            assert tuple(saved["state"][0][field].shape) == tuple(value.shape), field
            assert saved["state"][0][field].dtype.name == str(value.dtype)[6:], field
    resumed = [ember.from_numpy(p.detach().numpy().copy()).requires_grad_() for p in ours]
    opt2 = getattr(ember.optim, name)(resumed, **kwargs)
    opt2.load_state_dict(saved)
    got = _run(problem, opt2, resumed, STEPS - half, _ember_grad, first=half)
    _assert_trajectory(got, want, "float32")


@pytest.mark.parametrize("config", CONFIGS[1::3], ids=_config_id)
def test_loads_a_torch_state_dict(config):
    name, kwargs = config
    half = STEPS // 2
    problem = Problem("float64", seed=13)
    problem.noise = problem.noise * 2
    theirs = problem.torch_params()
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    _run(problem, ref, theirs, half, torch.from_numpy)
    ours = [ember.from_numpy(p.detach().numpy().copy()).requires_grad_() for p in theirs]
    opt = getattr(ember.optim, name)(ours, **kwargs)
    opt.load_state_dict(_torch_state_to_ember(ref.state_dict()))
    want = _run(problem, ref, theirs, STEPS - half, torch.from_numpy, first=half)
    got = _run(problem, opt, ours, STEPS - half, _ember_grad, first=half)
    np.testing.assert_allclose(
        np.concatenate([g.ravel() for g in got]),
        np.concatenate([w.ravel() for w in want]),
        rtol=1e-6,
        atol=1e-7,
    )


BAD_ARGS = [
    ("NAdam", {"lr": -1.0}),
    ("NAdam", {"eps": -1.0}),
    ("NAdam", {"betas": (1.0, 0.9)}),
    ("NAdam", {"betas": (0.9, -0.1)}),
    ("NAdam", {"weight_decay": -1.0}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("RAdam", {"betas": (0.9, 1.0)}),
    ("RAdam", {"weight_decay": -0.5}),
    ("Adamax", {"eps": -1e-3}),
    ("Adamax", {"betas": (-0.1, 0.9)}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"eps": -1.0}),
    ("Adadelta", {"weight_decay": -1.0}),
    ("Rprop", {"etas": (1.5, 1.2)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
    ("Rprop", {"lr": -1.0}),
    ("ASGD", {"weight_decay": -1.0}),
    ("ASGD", {"lr": -0.1}),
    ("SparseAdam", {"betas": (0.9, 1.5)}),
    ("SparseAdam", {"eps": -1.0}),
    ("Adafactor", {"lr": -1.0}),
    ("Adafactor", {"beta2_decay": 0.5}),
    ("Adafactor", {"eps": (-1.0, 1e-3)}),
    ("Adafactor", {"eps": (None, -1e-3)}),
    ("Adafactor", {"d": 0.5}),
    ("Adafactor", {"weight_decay": -1.0}),
]


@pytest.mark.parametrize("config", BAD_ARGS, ids=_config_id)
def test_validation_errors_are_torchs(config):
    name, kwargs = config
    with pytest.raises(ValueError) as theirs:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ours:
        getattr(ember.optim, name)([ember.zeros(2).requires_grad_()], **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_sparse_adam_refuses_dense_gradients_like_torch():
    theirs = torch.zeros(3, requires_grad=True)
    ours = ember.zeros(3).requires_grad_()
    ref, opt = torch.optim.SparseAdam([theirs]), ember.optim.SparseAdam([ours])
    assert opt.step() is None  # no gradient yet: nothing to refuse
    theirs.grad, ours.grad = torch.ones(3), ember.ones(3)
    with pytest.raises(RuntimeError) as want:
        ref.step()
    with pytest.raises(RuntimeError) as got:
        opt.step()
    assert str(got.value) == str(want.value)
    assert "dense gradients" in str(got.value)
    assert set(opt.param_groups[0]) == set(ref.param_groups[0])


@pytest.mark.parametrize(
    "name", ["NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD", "Adafactor"]
)
def test_tensor_lr_like_torch(name):
    """A 1-element tensor lr works as its value; a longer one is refused as torch does."""
    problem = Problem("float32", seed=14)
    ours, theirs = problem.ember_params(), problem.torch_params()
    opt = getattr(ember.optim, name)(ours, lr=ember.tensor(0.03))
    ref = getattr(torch.optim, name)(theirs, lr=torch.tensor(0.03))
    got = _run(problem, opt, ours, 5, _ember_grad)
    want = _run(problem, ref, theirs, 5, torch.from_numpy)
    _assert_trajectory(got, want, "float32")
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(torch.optim, name)(theirs, lr=torch.tensor([0.1, 0.2]))
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(ember.optim, name)(ours, lr=ember.tensor([0.1, 0.2]))


NAMES = ["NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD", "SparseAdam", "Adafactor"]


@pytest.mark.parametrize("name", NAMES)
def test_constructor_signature_is_torchs(name):
    """Every keyword of torch's constructor (foreach, fused, maximize, capturable,
    differentiable, decoupled_weight_decay...), in torch's order, kinds and defaults."""

    def shape(cls):
        params = inspect.signature(cls.__init__).parameters.values()
        return [(p.name, p.kind, p.default) for p in params]

    assert shape(getattr(ember.optim, name)) == shape(getattr(torch.optim, name))


@pytest.mark.parametrize("name", NAMES)
def test_defaults_are_torchs(name):
    opt = getattr(ember.optim, name)([ember.zeros(2).requires_grad_()])
    ref = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)])
    assert opt.defaults == ref.defaults
    assert {k: v for k, v in opt.param_groups[0].items() if k != "params"} == {
        k: v for k, v in ref.param_groups[0].items() if k != "params"
    }


def test_every_torch_optimizer_exists():
    names = [n for n in torch.optim.__all__ if n[0].isupper() and n != "Optimizer"]
    assert [n for n in names if not hasattr(ember.optim, n)] == []
