"""CyclicLR and CosineAnnealingWarmRestarts against torch: lr (and momentum) sequences."""

from __future__ import annotations

import pickle
import warnings

import pytest
from test_lr_scheduler import _assert_same, _ours, _run, _theirs

import ember

torch = pytest.importorskip("torch")


class _Halving:
    """A callable object: CyclicLR saves its __dict__ in the state dict."""

    def __init__(self, rate):
        self.rate = rate

    def __call__(self, x):
        return self.rate**x


SCHEDULERS = {
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-groups-down": lambda m, o: m.CyclicLR(
        o, base_lr=[0.01, 0.001], max_lr=[0.1, 0.05], step_size_up=3, step_size_down=7
    ),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=2, step_size_down=3, mode="triangular2"
    ),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.9, base_momentum=[0.7, 0.6]
    ),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, scale_fn=_Halving(0.8), scale_mode="iterations"
    ),
    "CyclicLR-no-momentum": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, cycle_momentum=False
    ),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5),
    "CosineAnnealingWarmRestarts-mult": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001
    ),
}


@pytest.mark.parametrize("adam", [False, True])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch(name, adam):
    make = SCHEDULERS[name]
    ours, theirs = _ours(adam), _theirs(adam)
    got = _run(ours, make(ember.optim.lr_scheduler, ours))
    want = _run(theirs, make(torch.optim.lr_scheduler, theirs))
    _assert_same(got, want)
    assert set(ours.param_groups[0]) == set(theirs.param_groups[0])


@pytest.mark.parametrize("t_mult", [1, 2, 3])
def test_warm_restarts_fractional_epochs_match_torch(t_mult):
    ours, theirs = _ours(), _theirs()
    mine = ember.optim.lr_scheduler.CosineAnnealingWarmRestarts(ours, 2, t_mult, 0.005)
    ref = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs, 2, t_mult, 0.005)
    got, want = [], []
    for epoch in [0.5, 1.25, 2, 3.7, 6.1, 9, 14.5, 20, 3, 0]:
        for opt, sched, seen in ((ours, mine, got), (theirs, ref, want)):
            opt.step()
            sched.step(epoch)
            seen.append((list(sched.get_last_lr()), sched.T_cur, sched.T_i, sched.last_epoch))
    _assert_same([g[0] for g in got], [w[0] for w in want])
    assert [g[1:] for g in got] == [w[1:] for w in want]
    opt = _ours()
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        ember.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, 2).step(-1)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("CosineAnnealingWarmRestarts", {"T_0": 0}),
        ("CosineAnnealingWarmRestarts", {"T_0": 2.5}),
        ("CosineAnnealingWarmRestarts", {"T_0": 2, "T_mult": 0}),
        ("CosineAnnealingWarmRestarts", {"T_0": 2, "eta_min": "x"}),
        ("CyclicLR", {"base_lr": 0.1, "max_lr": 1.0, "mode": "nope"}),
        ("CyclicLR", {"base_lr": [0.1], "max_lr": 1.0}),
    ],
)
def test_validation_errors_are_torchs(name, kwargs):
    with pytest.raises(ValueError) as want:
        getattr(torch.optim.lr_scheduler, name)(_theirs(), **kwargs)
    with pytest.raises(ValueError) as got:
        getattr(ember.optim.lr_scheduler, name)(_ours(), **kwargs)
    assert str(got.value) == str(want.value)


def test_cyclic_needs_momentum_like_torch():
    params = [ember.zeros(2).requires_grad_()]
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        ember.optim.lr_scheduler.CyclicLR(ember.optim.Adagrad(params), 0.01, 0.1)


@pytest.mark.parametrize("name", ["CyclicLR-scale_fn", "CyclicLR-exp_range"])
def test_cyclic_state_dict_resumes(name):
    make = SCHEDULERS[name]
    theirs = _theirs()
    want = _run(theirs, make(torch.optim.lr_scheduler, theirs), steps=12)
    ours = _ours()
    first = make(ember.optim.lr_scheduler, ours)
    got = _run(ours, first, steps=5)
    saved = pickle.loads(pickle.dumps(first.state_dict()))
    opt_state = ours.state_dict()
    again = _ours()
    again.load_state_dict(opt_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        second = make(ember.optim.lr_scheduler, again)
    second.load_state_dict(saved)
    got += _run(again, second, steps=7)[1:]
    _assert_same(got, want)


def test_every_torch_scheduler_exists():
    missing = [
        n for n in torch.optim.lr_scheduler.__all__ if not hasattr(ember.optim.lr_scheduler, n)
    ]
    assert missing == []
