"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: the same lr sequences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

STEPS = 30


def _lambda_list(m, opt):
    return m.LambdaLR(opt, [lambda e: 0.9**e, lambda e: 1.0 / (e + 1)])


def _sequential(m, opt):
    warm = m.LinearLR(opt, start_factor=0.1, total_iters=5)
    decay = m.ExponentialLR(opt, gamma=0.9)
    return m.SequentialLR(opt, schedulers=[warm, decay], milestones=[5])


def _sequential3(m, opt):
    parts = [
        m.ConstantLR(opt, factor=0.5, total_iters=3),
        m.CosineAnnealingLR(opt, T_max=8, eta_min=0.001),
        m.StepLR(opt, step_size=4, gamma=0.5),
    ]
    return m.SequentialLR(opt, schedulers=parts, milestones=[4, 14])


def _chained(m, opt):
    return m.ChainedScheduler(
        [m.ExponentialLR(opt, gamma=0.95), m.MultiStepLR(opt, milestones=[6, 12], gamma=0.5)]
    )


class _Warmup:
    """A callable object: LambdaLR saves its __dict__ in the state dict."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


SCHEDULERS = {
    "StepLR": lambda m, opt: m.StepLR(opt, step_size=7, gamma=0.5),
    "MultiStepLR": lambda m, opt: m.MultiStepLR(opt, milestones=[3, 10, 10, 20], gamma=0.3),
    "ExponentialLR": lambda m, opt: m.ExponentialLR(opt, gamma=0.9),
    "CosineAnnealingLR": lambda m, opt: m.CosineAnnealingLR(opt, T_max=10, eta_min=0.001),
    "LambdaLR": lambda m, opt: m.LambdaLR(opt, lambda e: 0.95**e),
    "LambdaLR-list": _lambda_list,
    "LambdaLR-object": lambda m, opt: m.LambdaLR(opt, _Warmup(8)),
    "MultiplicativeLR": lambda m, opt: m.MultiplicativeLR(opt, lambda e: 0.97),
    "LinearLR": lambda m, opt: m.LinearLR(opt, start_factor=0.25, end_factor=0.9, total_iters=12),
    "ConstantLR": lambda m, opt: m.ConstantLR(opt, factor=0.5, total_iters=4),
    "PolynomialLR": lambda m, opt: m.PolynomialLR(opt, total_iters=20, power=2.0),
    "OneCycleLR": lambda m, opt: m.OneCycleLR(opt, max_lr=[1.0, 0.1], total_steps=STEPS + 1),
    "OneCycleLR-linear-3phase": lambda m, opt: m.OneCycleLR(
        opt,
        max_lr=0.5,
        epochs=4,
        steps_per_epoch=8,
        pct_start=0.25,
        anneal_strategy="linear",
        three_phase=True,
        base_momentum=[0.8, 0.7],
    ),
    "SequentialLR": _sequential,
    "SequentialLR-3": _sequential3,
    "ChainedScheduler": _chained,
}


def _optimizer(module, tensor, adam=False):
    params = [tensor(np.zeros(2, np.float32)), tensor(np.zeros(3, np.float32))]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.01}]
    if adam:
        return module.Adam(groups, lr=0.1)
    return module.SGD(groups, lr=0.1, momentum=0.9)


def _ours(adam=False):
    return _optimizer(ember.optim, lambda a: ember.from_numpy(a).requires_grad_(), adam)


def _theirs(adam=False):
    return _optimizer(torch.optim, lambda a: torch.tensor(a, requires_grad=True), adam)


def _momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def _run(opt, sched, steps=STEPS):
    seen = [(list(sched.get_last_lr()), _momenta(opt))]
    for _ in range(steps):
        opt.step()
        sched.step()
        seen.append((list(sched.get_last_lr()), _momenta(opt)))
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
    return seen


def _assert_same(got, want):
    np.testing.assert_allclose(np.array(got, dtype=float), np.array(want, dtype=float), rtol=1e-13)


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch(name):
    make = SCHEDULERS[name]
    ours, theirs = _ours(), _theirs()
    got = _run(ours, make(ember.optim.lr_scheduler, ours))
    want = _run(theirs, make(torch.optim.lr_scheduler, theirs))
    _assert_same(got, want)


def test_one_cycle_cycles_adam_beta1():
    make = SCHEDULERS["OneCycleLR"]
    ours, theirs = _ours(adam=True), _theirs(adam=True)
    got = _run(ours, make(ember.optim.lr_scheduler, ours))
    want = _run(theirs, make(torch.optim.lr_scheduler, theirs))
    _assert_same(got, want)
    assert ours.param_groups[0]["betas"][1] == 0.999


def test_one_cycle_refuses_steps_past_the_end():
    opt = _ours()
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_round_trip_mid_way(name):
    make = SCHEDULERS[name]
    module = ember.optim.lr_scheduler
    theirs = _theirs()
    want = _run(theirs, make(torch.optim.lr_scheduler, theirs))

    opt = _ours()
    sched = make(module, opt)
    first = _run(opt, sched, steps=STEPS // 2)
    saved_sched, saved_opt = sched.state_dict(), opt.state_dict()
    # PyTorch's recipe: build the scheduler first, then load both states.
    opt2 = _ours()
    sched2 = make(module, opt2)
    sched2.load_state_dict(saved_sched)
    opt2.load_state_dict(saved_opt)
    rest = _run(opt2, sched2, steps=STEPS - STEPS // 2)
    _assert_same(first + rest[1:], want)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"mode": "max", "factor": 0.5, "patience": 2},
        {"threshold_mode": "abs", "threshold": 0.05, "patience": 1, "cooldown": 2},
        {"mode": "max", "threshold_mode": "abs", "patience": 0, "min_lr": [0.02, 0.001]},
        {"factor": 0.5, "patience": 1, "min_lr": 0.004, "eps": 1e-3},
    ],
)
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    rng = np.random.default_rng(0)
    metrics = np.concatenate([np.linspace(1.0, 0.5, 8), 0.5 + 0.01 * rng.standard_normal(40)])
    results = []
    for optim, tensor_metric in ((ember.optim, ember.tensor), (torch.optim, torch.tensor)):
        opt = _optimizer(optim, lambda a, optim=optim: _leaf(optim, a))
        sched = optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        seen = []
        for i, value in enumerate(metrics):
            opt.step()
            sched.step(tensor_metric(float(value)) if i % 2 else float(value))
            seen.append(sched.get_last_lr() + [sched.best, sched.num_bad_epochs])
        results.append(seen)
    _assert_same(*results)


def _leaf(optim, array):
    if optim is torch.optim:
        return torch.tensor(array, requires_grad=True)
    return ember.from_numpy(array).requires_grad_()


def test_reduce_lr_on_plateau_state_dict():
    opt = _ours()
    sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="max", patience=1)
    for value in (1.0, 2.0, 1.5):
        sched.step(value)
    saved = sched.state_dict()
    other = ember.optim.lr_scheduler.ReduceLROnPlateau(_ours())
    other.load_state_dict(saved)
    assert (other.mode, other.best, other.num_bad_epochs) == ("max", 2.0, 1)
    assert other.mode_worse == -float("inf")


def test_step_with_epoch_uses_the_closed_form():
    results = []
    for module, opt in ((ember.optim.lr_scheduler, _ours()), (torch.optim.lr_scheduler, _theirs())):
        sched = module.StepLR(opt, step_size=3, gamma=0.5)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched.step(7)
        results.append(sched.get_last_lr())
    _assert_same(*results)


def test_warns_when_stepped_before_the_optimizer():
    opt = _ours()
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt.step()
    sched2 = ember.optim.lr_scheduler.StepLR(opt, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched2.get_lr()


def test_resuming_needs_initial_lr():
    with pytest.raises(KeyError, match="initial_lr"):
        ember.optim.lr_scheduler.StepLR(_ours(), step_size=2, last_epoch=3)


def test_argument_errors():
    m = ember.optim.lr_scheduler
    with pytest.raises(TypeError, match="is not an Optimizer"):
        m.StepLR(object(), step_size=2)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        m.LambdaLR(_ours(), [lambda e: 1.0])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        m.LinearLR(_ours(), start_factor=0)
    with pytest.raises(ValueError, match="total_steps OR"):
        m.OneCycleLR(_ours(), max_lr=0.1)
    with pytest.raises(ValueError, match="Factor should be < 1"):
        m.ReduceLROnPlateau(_ours(), factor=1.0)
    opt = _ours()
    with pytest.raises(ValueError, match="number of milestone points"):
        m.SequentialLR(opt, [m.StepLR(opt, 2), m.StepLR(opt, 3)], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        m.SequentialLR(opt, [m.StepLR(opt, 2), m.ReduceLROnPlateau(opt)], milestones=[2])
