"""``fused=True`` / ``foreach=True`` Adam, AdamW and SGD against torch.optim's fused steps, and
the fused ops themselves (``ember._fused_adam_``...) against ``torch._fused_adam_``...: the same
trajectories, the GradScaler arguments (grad_scale, found_inf) and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from test_optimizers import STEPS, TOL, Problem, _assert_trajectory, _ember_grad, _run

import ember

torch = pytest.importorskip("torch")

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.5, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.05, "betas": (0.8, 0.99), "eps": 1e-3}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
]


def _id(config) -> str:
    name, kwargs = config
    return name + "-" + "-".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("mode", ["fused", "foreach"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_trajectory_matches_torch(config, dtype, mode):
    name, kwargs = config
    problem = Problem(dtype)
    ours, theirs = problem.ember_params(), problem.torch_params()
    opt = getattr(ember.optim, name)(ours, **kwargs, **{mode: True})
    ref = getattr(torch.optim, name)(theirs, **kwargs, **{mode: True})
    skip_at = {3, 7}  # some steps leave one parameter without a gradient
    got = _run(problem, opt, ours, STEPS, _ember_grad, skip_at=skip_at)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy, skip_at=skip_at)
    _assert_trajectory(got, want, dtype)
    if mode == "fused" and name != "SGD":
        state, ref_state = opt.state[ours[0]], ref.state[theirs[0]]
        assert state["step"].dtype == ember.float32
        assert state["step"].item() == ref_state["step"].item()


class _MixedProblem(Problem):
    def grad(self, i, step, value):
        return super().grad(i, step, value).astype(value.dtype)


def test_fused_mixed_dtypes_group_by_dtype():
    problem = _MixedProblem("float64")
    ours, theirs = problem.ember_params(), problem.torch_params()
    ours[1], theirs[1] = ours[1].detach().float().requires_grad_(), theirs[1].detach().float()
    theirs[1].requires_grad_()
    opt = ember.optim.AdamW(ours, lr=0.05, fused=True)
    ref = torch.optim.AdamW(theirs, lr=0.05, fused=True)
    got = _run(problem, opt, ours, STEPS, _ember_grad)
    want = _run(problem, ref, theirs, STEPS, torch.from_numpy)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL["float32"])


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
@pytest.mark.parametrize("found", [0.0, 1.0])
def test_grad_scale_and_found_inf(name, found):
    """What a GradScaler hands a fused optimizer: gradients are unscaled in the op (and written
    back), and found_inf == 1 skips the update and leaves the step counters where they were."""
    problem = Problem("float32", seed=3)
    ours, theirs = problem.ember_params(), problem.torch_params()
    kwargs = {"lr": 0.05, "momentum": 0.9} if name == "SGD" else {"lr": 0.05}
    opt = getattr(ember.optim, name)(ours, fused=True, **kwargs)
    ref = getattr(torch.optim, name)(theirs, fused=True, **kwargs)
    for o, scale_of in ((opt, ember.tensor), (ref, torch.tensor)):
        o.grad_scale = scale_of([4.0])  # GradScaler._scale has shape (1,)
        o.found_inf = scale_of(found)
    got = _run(problem, opt, ours, 3, _ember_grad)
    want = _run(problem, ref, theirs, 3, torch.from_numpy)
    _assert_trajectory(got, want, "float32")
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), **TOL["float32"])
    if name != "SGD":
        assert opt.state[ours[0]]["step"].item() == ref.state[theirs[0]]["step"].item()


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD"])
def test_constructor_errors(name):
    params = [ember.zeros(3).requires_grad_()]
    for cls in (getattr(ember.optim, name), getattr(torch.optim, name)):
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            cls(params if cls.__module__.startswith("ember") else [torch.zeros(3)], lr=0.1,
                fused=True, foreach=True)  # fmt: skip
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            cls(params if cls.__module__.startswith("ember") else [torch.zeros(3)], lr=0.1,
                fused=True, differentiable=True)  # fmt: skip


def test_integer_parameter_refused_at_step():
    p = ember.zeros(3, dtype=ember.int64)
    p.grad = ember.zeros(3, dtype=ember.int64)
    opt = ember.optim.Adam([p], fused=True)
    with pytest.raises(RuntimeError, match=r"`fused=True` requires all the params to be floating"):
        opt.step()


def _adam_lists(rng, amsgrad):
    shapes = [(3, 4), (5,), (2, 1, 3)]
    lists = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
    sqs = [[abs(rng.standard_normal(s)).astype(np.float32) for s in shapes] for _ in range(2)]
    return lists + (sqs if amsgrad else sqs[:1] + [[]])


@pytest.mark.parametrize("name", ["_fused_adam_", "_fused_adamw_"])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_fused_adam_op_matches_torch(name, amsgrad):
    lists = _adam_lists(np.random.default_rng(4), amsgrad)
    kw = {"lr": 0.1, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.1, "eps": 1e-8}
    kw.update(amsgrad=amsgrad, maximize=True)
    ours = [[ember.from_numpy(x.copy()) for x in xs] for xs in lists]
    theirs = [[torch.from_numpy(x.copy()) for x in xs] for xs in lists]
    getattr(ember, name)(*ours, [ember.tensor(3.0)] * 3, **kw, grad_scale=ember.tensor([2.0]))
    getattr(torch, name)(*theirs, [torch.tensor(3.0)] * 3, **kw, grad_scale=torch.tensor([2.0]))
    for xs, ys in zip(ours, theirs):
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(x.numpy(), y.numpy(), **TOL["float32"])


def test_fused_op_errors():
    xs = [ember.zeros(3), ember.zeros(2)]
    with pytest.raises(RuntimeError, match="same number of tensors"):
        ember._fused_sgd_(xs, xs[:1], [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=False)  # fmt: skip
    ints = [ember.zeros(3, dtype=ember.int32)]
    with pytest.raises(RuntimeError, match="not implemented for 'int32'"):
        ember._fused_sgd_(ints, ints, [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=False)  # fmt: skip


def test_fused_resumes_a_default_state_dict():
    """A fused Adam loading a default one's state (float steps) continues its trajectory."""
    problem = Problem("float32", seed=5)
    theirs = problem.torch_params()
    want = _run(problem, torch.optim.Adam(theirs, lr=0.05), theirs, STEPS, torch.from_numpy)
    first = problem.ember_params()
    opt = ember.optim.Adam(first, lr=0.05)
    _run(problem, opt, first, STEPS // 2, _ember_grad)
    resumed = ember.optim.Adam(first, lr=0.05, fused=True)
    resumed.load_state_dict(opt.state_dict())
    got = _run(problem, resumed, first, STEPS - STEPS // 2, _ember_grad, first=STEPS // 2)
    _assert_trajectory(got, want, "float32")
