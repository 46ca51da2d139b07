"""ember.optim against torch.optim: the same start, the same gradients, the same trajectory.

Gradients come from an elementwise quadratic ``g = a*(p - c) + noise_t`` evaluated in numpy on
each side's own parameters, so the tests need only elementwise kernels (no reductions).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (3,), (2, 1, 2)]
STEPS = 10
TOL = {"float32": {"rtol": 2e-5, "atol": 2e-6}, "float64": {"rtol": 1e-11, "atol": 1e-12}}

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "maximize": True}),
    (
        "SGD",
        {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.01, "nesterov": True, "maximize": True},
    ),
    ("Adam", {}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.99)}),
    ("Adam", {"lr": 0.05, "eps": 1e-3}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "betas": (0.5, 0.9), "maximize": True}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9}),
    ("RMSprop", {"lr": 0.01, "eps": 1e-3}),
    ("RMSprop", {"lr": 0.01, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "maximize": True, "momentum": 0.5}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5}),
    ("Adagrad", {"lr": 0.1, "eps": 1e-3}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "lr_decay": 0.05, "weight_decay": 0.01}),
]


def _config_id(config) -> str:
    name, kwargs = config
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


class Problem:
    """Initial parameters and per-step gradient rules shared by both frameworks."""

    def __init__(self, dtype: str, seed: int = 0, shapes=SHAPES):
        rng = np.random.default_rng(seed)
        self.dtype = dtype
        self.init = [rng.standard_normal(s) for s in shapes]
        self.curvature = [rng.uniform(0.5, 2.0, s) for s in shapes]
        self.center = [rng.standard_normal(s) for s in shapes]
        self.noise = [[0.1 * rng.standard_normal(s) for s in shapes] for _ in range(2 * STEPS)]

    def grad(self, i: int, step: int, value: np.ndarray) -> np.ndarray:
        g = self.curvature[i] * (value - self.center[i]) + self.noise[step][i]
        return g.astype(self.dtype)

    def ember_params(self):
        return [ember.from_numpy(x.astype(self.dtype)).clone().requires_grad_() for x in self.init]

    def torch_params(self):
        return [torch.tensor(x.astype(self.dtype), requires_grad=True) for x in self.init]


def _set_grads(problem, params, step, to_tensor, skip=()):
    for i, p in enumerate(params):
        if i in skip:
            p.grad = None
            continue
        value = p.detach().numpy()
        p.grad = to_tensor(problem.grad(i, step, value))


def _ember_grad(array):
    return ember.from_numpy(array)


def _run(problem, opt, params, steps, to_tensor, first=0, skip_at=None):
    for step in range(first, first + steps):
        skip = (step % len(params),) if skip_at is not None and step in skip_at else ()
        _set_grads(problem, params, step, to_tensor, skip)
        opt.step()
    return [p.detach().numpy().copy() for p in params]


def _assert_trajectory(got, want, dtype):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_config_id)
def test_matches_torch(config, dtype):
    trajectory_against_torch(config, dtype)


SKIP_AT = {3, 7}  # steps that leave one parameter without a gradient


def trajectory_against_torch(config, dtype, steps=STEPS):
    """Run ``config``'s optimizer in ember and torch from the same start; assert the
    trajectories match; return (problem, ember optimizer, torch optimizer, ember trajectory)."""
    name, kwargs = config
    problem = Problem(dtype)
    ours = problem.ember_params()
    theirs = problem.torch_params()
    opt = getattr(ember.optim, name)(ours, **kwargs)
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    got = _run(problem, opt, ours, steps, _ember_grad, skip_at=SKIP_AT)
    want = _run(problem, ref, theirs, steps, torch.from_numpy, skip_at=SKIP_AT)
    _assert_trajectory(got, want, dtype)
    return problem, opt, ref, got


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_param_groups_with_their_own_options(name):
    problem = Problem("float32", seed=1)
    ours, theirs = problem.ember_params(), problem.torch_params()
    extra = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}

    def groups(params):
        return [
            {"params": params[:1]},
            {"params": params[1:], "lr": 0.003, "weight_decay": 0.05},
        ]

    opt = getattr(ember.optim, name)(groups(ours), lr=0.02, **extra)
    ref = getattr(torch.optim, name)(groups(theirs), lr=0.02, **extra)
    assert opt.param_groups[1]["lr"] == 0.003
    assert opt.param_groups[0]["weight_decay"] == ref.param_groups[0]["weight_decay"]
    assert set(opt.param_groups[0]) == set(ref.param_groups[0])
    got = _run(problem, opt, ours, STEPS, _ember_grad)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy)
    _assert_trajectory(got, want, "float32")


@pytest.mark.parametrize("config", CONFIGS[1::3], ids=_config_id)
def test_empty_and_strided_parameters(config):
    """A 0-size parameter, a transposed (non-contiguous) one, and reversed (negative-stride)
    gradients update like torch's."""
    name, kwargs = config
    problem = Problem("float32", seed=6, shapes=[(0, 3), (3, 4), (5,)])
    ours = [
        # (from_numpy of an empty array has stride 0, which in-place ops refuse on this branch)
        ember.zeros((0, 3)).requires_grad_(),
        ember.from_numpy(problem.init[1].astype(np.float32).T.copy()).t().requires_grad_(),
        ember.from_numpy(problem.init[2].astype(np.float32)).requires_grad_(),
    ]
    assert not ours[1].is_contiguous()
    theirs = problem.torch_params()
    opt = getattr(ember.optim, name)(ours, **kwargs)
    ref = getattr(torch.optim, name)(theirs, **kwargs)

    def reversed_grad(array):
        return ember.from_numpy(np.ascontiguousarray(array[..., ::-1])[..., ::-1])

    got = _run(problem, opt, ours, STEPS, reversed_grad)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy)
    _assert_trajectory(got, want, "float32")


def _torch_state_to_ember(state_dict):
    def convert(value):
        if isinstance(value, torch.Tensor):
            return ember.from_numpy(value.detach().numpy().copy())
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(convert(v) for v in value)
        return value

    return convert(state_dict)


@pytest.mark.parametrize("config", CONFIGS[1::2], ids=_config_id)
def test_state_dict_round_trip_mid_way(config):
    name, kwargs = config
    half = STEPS // 2
    problem = Problem("float32", seed=2)
    theirs = problem.torch_params()
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy)

    first = problem.ember_params()
    opt = getattr(ember.optim, name)(first, **kwargs)
    _run(problem, opt, first, half, _ember_grad)
    saved = opt.state_dict()
    # A fresh optimizer over fresh parameters holding the same values resumes the trajectory.
    resumed = [ember.from_numpy(p.detach().numpy().copy()).requires_grad_() for p in first]
    opt2 = getattr(ember.optim, name)(resumed, **kwargs)
    opt2.load_state_dict(saved)
    got = _run(problem, opt2, resumed, STEPS - half, _ember_grad, first=half)
    _assert_trajectory(got, want, "float32")
    # The original optimizer is unaffected by the copy and continues the same way.
    got_first = _run(problem, opt, first, STEPS - half, _ember_grad, first=half)
    _assert_trajectory(got_first, want, "float32")


@pytest.mark.parametrize("config", CONFIGS[::3], ids=_config_id)
def test_state_dict_layout_is_torchs(config):
    name, kwargs = config
    problem = Problem("float32", seed=3)
    ours, theirs = problem.ember_params(), problem.torch_params()
    opt = getattr(ember.optim, name)(ours, **kwargs)
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    _run(problem, opt, ours, 3, _ember_grad)
    _run(problem, ref, theirs, 3, torch.from_numpy)
    mine, want = opt.state_dict(), ref.state_dict()
    assert [g["params"] for g in mine["param_groups"]] == [
        g["params"] for g in want["param_groups"]
    ]
    assert [set(g) for g in mine["param_groups"]] == [set(g) for g in want["param_groups"]]
    assert set(mine["state"]) == set(want["state"])
    for key, entry in want["state"].items():
        assert set(mine["state"][key]) == set(entry)
        for field, value in entry.items():
            got = mine["state"][key][field]
            if isinstance(value, torch.Tensor):
                assert isinstance(got, ember.Tensor), field
                assert got.dtype.name == str(value.dtype).removeprefix("torch."), field
                np.testing.assert_allclose(got.numpy(), value.numpy(), rtol=1e-5, atol=1e-6)
            else:
                assert got == value


@pytest.mark.parametrize("config", CONFIGS[::4], ids=_config_id)
def test_loads_a_torch_state_dict(config):
    """A state dict written by torch (tensors converted) resumes the torch trajectory."""
    name, kwargs = config
    half = STEPS // 2
    problem = Problem("float64", seed=4)
    theirs = problem.torch_params()
    ref = getattr(torch.optim, name)(theirs, **kwargs)
    _run(problem, ref, theirs, half, torch.from_numpy)
    saved = _torch_state_to_ember(ref.state_dict())
    ours = [ember.from_numpy(p.detach().numpy().copy()).requires_grad_() for p in theirs]
    opt = getattr(ember.optim, name)(ours, **kwargs)
    opt.load_state_dict(saved)
    want = _run(problem, ref, theirs, STEPS - half, torch.from_numpy, first=half)
    got = _run(problem, opt, ours, STEPS - half, _ember_grad, first=half)
    _assert_trajectory(got, want, "float64")


def test_load_state_dict_copies_tensors():
    problem = Problem("float32")
    params = problem.ember_params()
    opt = ember.optim.Adam(params, lr=0.1)
    _run(problem, opt, params, 2, _ember_grad)
    saved = opt.state_dict()
    other = ember.optim.Adam(params, lr=0.1)
    other.load_state_dict(saved)
    before = other.state[params[0]]["exp_avg"].numpy().copy()
    saved["state"][0]["exp_avg"].fill_(123.0)
    np.testing.assert_array_equal(other.state[params[0]]["exp_avg"].numpy(), before)
    assert other.state[params[0]]["step"] == 2.0


def test_load_state_dict_rejects_mismatched_groups():
    params = Problem("float32").ember_params()
    opt = ember.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
    saved = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        ember.optim.SGD(params, lr=0.1).load_state_dict(saved)
    swapped = ember.optim.SGD([{"params": params[:2]}, {"params": params[2:]}], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        swapped.load_state_dict(saved)


def test_load_state_dict_restores_group_options():
    params = Problem("float32").ember_params()
    opt = ember.optim.SGD(params, lr=0.1, momentum=0.5)
    saved = opt.state_dict()
    other = ember.optim.SGD(params, lr=0.7)
    other.load_state_dict(saved)
    assert other.param_groups[0]["lr"] == 0.1
    assert other.param_groups[0]["momentum"] == 0.5
    assert all(a is b for a, b in zip(other.param_groups[0]["params"], params, strict=True))


def test_param_group_validation():
    params = Problem("float32").ember_params()
    opt = ember.optim.SGD(params[:2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": params[1:]})
    opt.add_param_group({"params": params[2], "lr": 0.5})
    (added,) = opt.param_groups[1]["params"]
    assert added is params[2]
    assert opt.param_groups[1]["momentum"] == 0 and opt.param_groups[1]["lr"] == 0.5
    with pytest.raises(TypeError, match="ordered collections"):
        ember.optim.SGD([{"params": {params[0]}}], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        ember.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        ember.optim.SGD(params[0], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        ember.optim.SGD([params[0] * 2], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ember.optim.Adam(params, lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        ember.optim.SGD(params, lr=0.1, nesterov=True)


def test_named_parameters():
    params = Problem("float32").ember_params()
    opt = ember.optim.SGD([("a", params[0]), ("b", params[1])], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["a", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["a", "b"]


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad(set_to_none):
    params = Problem("float32").ember_params()
    opt = ember.optim.SGD(params, lr=0.1)
    for p in params:
        p.grad = ember.ones(p.shape)
    opt.zero_grad(set_to_none=set_to_none)
    for p in params:
        if set_to_none:
            assert p.grad is None
        else:
            np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, np.float32))


def test_step_hooks_and_closure():
    problem = Problem("float32")
    params = problem.ember_params()
    opt = ember.optim.SGD(params, lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))

    def closure():
        calls.append("closure")
        assert ember.autograd.is_grad_enabled()
        _set_grads(problem, params, 0, _ember_grad)
        return 1.5

    assert opt.step(closure) == 1.5
    assert calls == ["pre", "closure", "post"]
    pre.remove()
    opt.step()
    assert calls[3:] == ["post"]
    assert ember.autograd.is_grad_enabled()


def test_step_runs_without_recording():
    """Updates run under no_grad: parameters stay leaves and grads are untouched."""
    problem = Problem("float32")
    params = problem.ember_params()
    opt = ember.optim.Adam(params, lr=0.1)
    _set_grads(problem, params, 0, _ember_grad)
    opt.step()
    assert all(p.is_leaf and p.grad_fn is None and p.requires_grad for p in params)


# lr=5 overshoots, so the line search zooms; lr=0.1 undershoots, so it extrapolates first.
@pytest.mark.parametrize(
    ("line_search_fn", "lr"), [(None, 0.8), ("strong_wolfe", 5.0), ("strong_wolfe", 0.1)]
)
def test_lbfgs_matches_torch(line_search_fn, lr):
    problem = Problem("float64", seed=5)
    kwargs = {"lr": lr, "max_iter": 4, "history_size": 3, "line_search_fn": line_search_fn}

    def run(params, opt, to_tensor):
        # A quartic bowl: the curvature changes along the way, so the history and the line
        # search matter.
        def closure():
            loss = 0.0
            for i, p in enumerate(params):
                x = p.detach().numpy() - problem.center[i]
                loss += float(np.sum(0.5 * problem.curvature[i] * x**2 + 0.25 * x**4))
                p.grad = to_tensor(problem.curvature[i] * x + x**3)
            return loss

        losses = [opt.step(closure) for _ in range(3)]
        state = opt.state[params[0]]
        counts = (state["func_evals"], state["n_iter"])
        return losses, counts, [p.detach().numpy().copy() for p in params]

    ours, theirs = problem.ember_params(), problem.torch_params()
    got_losses, got_counts, got = run(ours, ember.optim.LBFGS(ours, **kwargs), _ember_grad)
    want_losses, want_counts, want = run(
        theirs, torch.optim.LBFGS(theirs, **kwargs), torch.from_numpy
    )
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-10)
    assert got_counts == want_counts
    _assert_trajectory(got, want, "float64")
