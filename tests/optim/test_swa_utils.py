"""ember.optim.swa_utils against torch.optim.swa_utils: averaged weights, BN statistics, SWALR."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from test_lr_scheduler import _assert_same, _ours, _run, _theirs

import ember

torch = pytest.importorskip("torch")
swa = ember.optim.swa_utils


def _models(dtype="float32"):
    tdtype = getattr(torch, dtype)
    ref = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2)
    ).to(tdtype)
    ours = ember.nn.Sequential(
        ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4), ember.nn.Linear(4, 2)
    )
    ours = ours.to(getattr(ember, dtype))
    _copy(ours, ref)
    return ours, ref


def _copy(ours, ref):
    with ember.no_grad():
        for mine, theirs in zip(ours.state_dict().values(), ref.state_dict().values()):
            mine.copy_(ember.from_numpy(theirs.detach().numpy().copy()))


def _perturb(ours, ref, rng):
    """One fake "training step": the same new values in both models' parameters and buffers
    (shifts that keep BatchNorm's running variance positive)."""
    with torch.no_grad():
        for t in ref.state_dict().values():
            if t.is_floating_point():
                t.add_(
                    torch.from_numpy(rng.uniform(-0.5, 1.0, tuple(t.shape)).astype(t.numpy().dtype))
                )
            else:
                t.add_(1)
    _copy(ours, ref)


def _averagers(kind):
    t = torch.optim.swa_utils
    return {
        "swa": ({}, {}),
        "ema-multi": (
            {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.9)},
            {"multi_avg_fn": t.get_ema_multi_avg_fn(0.9)},
        ),
        "swa-multi": (
            {"multi_avg_fn": swa.get_swa_multi_avg_fn()},
            {"multi_avg_fn": t.get_swa_multi_avg_fn()},
        ),
        "ema-avg": (
            {"avg_fn": swa.get_ema_avg_fn(0.8)},
            {"avg_fn": t.get_ema_avg_fn(0.8)},
        ),
        "swa-avg": ({"avg_fn": swa.get_swa_avg_fn()}, {"avg_fn": t.get_swa_avg_fn()}),
        "ema-buffers": (
            {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.7), "use_buffers": True},
            {"multi_avg_fn": t.get_ema_multi_avg_fn(0.7), "use_buffers": True},
        ),
        "swa-buffers": ({"use_buffers": True}, {"use_buffers": True}),
    }[kind]


KINDS = ["swa", "ema-multi", "swa-multi", "ema-avg", "swa-avg", "ema-buffers", "swa-buffers"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", KINDS)
def test_averaged_model_matches_torch(kind, dtype):
    rng = np.random.default_rng(0)
    ours, ref = _models(dtype)
    mine_kwargs, their_kwargs = _averagers(kind)
    mine = swa.AveragedModel(ours, **mine_kwargs)
    theirs = torch.optim.swa_utils.AveragedModel(ref, **their_kwargs)
    for _ in range(6):
        _perturb(ours, ref, rng)
        mine.update_parameters(ours)
        theirs.update_parameters(ref)
    got, want = mine.state_dict(), theirs.state_dict()
    assert list(got) == list(want)
    # The average is not just the last weights (the check above could not tell otherwise).
    assert not np.allclose(got["module.0.weight"].numpy(), ref.state_dict()["0.weight"].numpy())
    tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-7, "atol": 1e-7}
    for key, value in want.items():
        np.testing.assert_allclose(got[key].numpy(), value.numpy(), err_msg=key, **tol)
    x = rng.standard_normal((5, 3)).astype(dtype)
    mine.eval(), theirs.eval()
    np.testing.assert_allclose(
        mine(ember.from_numpy(x)).detach().numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        **tol,
    )


def test_averaged_model_is_a_copy_and_checks_arguments():
    ours, _ = _models()
    averaged = swa.AveragedModel(ours)
    assert averaged.module is not ours
    assert int(averaged.n_averaged.item()) == 0 and averaged.n_averaged.dtype == ember.int64
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa.AveragedModel(
            ours, avg_fn=swa.get_swa_avg_fn(), multi_avg_fn=swa.get_swa_multi_avg_fn()
        )
    for make in (swa.get_ema_avg_fn, swa.get_ema_multi_avg_fn):
        with pytest.raises(ValueError) as got:
            make(1.5)
        with pytest.raises(ValueError) as want:
            getattr(torch.optim.swa_utils, make.__name__)(1.5)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("as_tuples", [False, True])
def test_update_bn_matches_torch(as_tuples):
    rng = np.random.default_rng(1)
    ours, ref = _models()
    ours.eval(), ref.eval()
    batches = [(rng.standard_normal((n, 3)) * 2 + 1).astype(np.float32) for n in (4, 7, 5)]
    mine = [ember.from_numpy(b) for b in batches]
    theirs = [torch.from_numpy(b) for b in batches]
    if as_tuples:
        mine = [(b, 0) for b in mine]
        theirs = [(b, 0) for b in theirs]
    swa.update_bn(mine, ours)
    torch.optim.swa_utils.update_bn(theirs, ref)
    assert not ours.training and ours[1].momentum == ref[1].momentum == 0.1
    for key, value in ref.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6, err_msg=key
        )


def test_update_bn_without_batch_norm_is_a_no_op():
    model = ember.nn.Linear(3, 2)
    swa.update_bn([ember.ones(2, 3)], model)


SWALRS = {
    "cos": lambda m, o: m.SWALR(o, swa_lr=0.05, anneal_epochs=5),
    "linear-groups": lambda m, o: m.SWALR(
        o, swa_lr=[0.05, 0.2], anneal_epochs=3, anneal_strategy="linear"
    ),
    "no-anneal": lambda m, o: m.SWALR(o, swa_lr=0.02, anneal_epochs=0),
}


@pytest.mark.parametrize("name", list(SWALRS))
def test_swalr_matches_torch(name):
    ours, theirs = _ours(), _theirs()
    mine = SWALRS[name](swa, ours)
    got = _run(ours, mine, steps=12)
    want = _run(theirs, SWALRS[name](torch.optim.swa_utils, theirs), steps=12)
    _assert_same(got, want)
    state = pickle.loads(pickle.dumps(mine.state_dict()))
    again = SWALRS[name](swa, _ours())
    again.load_state_dict(state)
    assert again.anneal_func(0.5) == mine.anneal_func(0.5)


@pytest.mark.parametrize(
    "kwargs", [{"anneal_strategy": "exp"}, {"anneal_epochs": -1}, {"anneal_epochs": 2.5}]
)
def test_swalr_validation_is_torchs(kwargs):
    with pytest.raises(ValueError) as want:
        torch.optim.swa_utils.SWALR(_theirs(), 0.05, **kwargs)
    with pytest.raises(ValueError) as got:
        swa.SWALR(_ours(), 0.05, **kwargs)
    assert str(got.value) == str(want.value)


def test_swa_utils_names_are_torchs():
    assert sorted(swa.__all__) == sorted(torch.optim.swa_utils.__all__)


def _train_swa(nn, optim, tensor, ours_model, batches):
    """The torch SWA tutorial's loop: warm-restart cosine schedule, then SWA with SWALR, an
    EMA alongside, BatchNorm statistics recomputed for the averaged weights at the end."""
    opt = optim.NAdam(ours_model.parameters(), lr=0.02)
    sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    swa_model = optim.swa_utils.AveragedModel(ours_model)
    ema_model = optim.swa_utils.AveragedModel(
        ours_model, multi_avg_fn=optim.swa_utils.get_ema_multi_avg_fn(0.9)
    )
    swa_sched = optim.swa_utils.SWALR(opt, swa_lr=0.01, anneal_epochs=2)
    loader = [(tensor(x), tensor(y)) for x, y in batches]
    for epoch in range(8):
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.mse_loss(ours_model(x), y)
            loss.backward()
            opt.step()
            ema_model.update_parameters(ours_model)
        if epoch >= 4:
            swa_model.update_parameters(ours_model)
            swa_sched.step()
        else:
            sched.step()
    optim.swa_utils.update_bn(loader, swa_model)
    return swa_model, ema_model, float(loss.item())


def test_swa_training_program_matches_torch():
    rng = np.random.default_rng(5)

    def build(nn):
        # BatchNorm first: a bias right before it has a ~0 gradient that NAdam would turn
        # into rounding noise of lr's size.
        return nn.Sequential(nn.BatchNorm1d(3), nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))

    ours, ref = build(ember.nn), build(torch.nn)
    _copy(ours, ref)
    batches = [
        (
            rng.standard_normal((6, 3)).astype(np.float32),
            rng.standard_normal((6, 2)).astype(np.float32),
        )
        for _ in range(3)
    ]
    got = _train_swa(ember.nn, ember.optim, ember.from_numpy, ours, batches)
    want = _train_swa(torch.nn, torch.optim, torch.from_numpy, ref, batches)
    assert got[2] == pytest.approx(want[2], rel=1e-4)
    for mine, theirs in zip(got[:2], want[:2]):
        expected = theirs.state_dict()
        for key, value in mine.state_dict().items():
            np.testing.assert_allclose(
                value.numpy(), expected[key].numpy(), rtol=1e-4, atol=1e-5, err_msg=key
            )
