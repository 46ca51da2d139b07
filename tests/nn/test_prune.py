"""nn.utils.prune against PyTorch: the deterministic methods (L1 unstructured, Ln structured,
custom masks, global L1) give PyTorch's masks, alone and combined through PruningContainer;
the random ones prune the requested count; the reparametrization (``_orig``, ``_mask``, the
hook), gradients, remove and is_pruned behave as PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.utils.prune as prune

from .oracle import assert_close, check_module, copy_state, to_ember, to_torch

torch = pytest.importorskip("torch")
TP = pytest.importorskip("torch.nn.utils.prune")


def _pair(name, *args):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, name)(*args)
    ours = getattr(ember.nn, name)(*args)
    copy_state(theirs, ours)
    return ours, theirs


STEPS = [
    [("l1_unstructured", {"amount": 0.3})],
    [("l1_unstructured", {"amount": 5})],
    [("ln_structured", {"amount": 0.5, "n": 2, "dim": 0})],
    [("ln_structured", {"amount": 1, "n": 1, "dim": -1})],
    [("l1_unstructured", {"amount": 0.2}), ("l1_unstructured", {"amount": 0.25})],
    [("ln_structured", {"amount": 1, "n": 2, "dim": 0}), ("l1_unstructured", {"amount": 4})],
    [("l1_unstructured", {"amount": 3}), ("ln_structured", {"amount": 0.4, "n": 1, "dim": 1})],
    [("identity", {})],
]


@pytest.mark.parametrize("steps", STEPS, ids=[str(s) for s in STEPS])
def test_deterministic_pruning_matches_torch(rng, steps):
    ours, theirs = _pair("Conv2d", 3, 5, 2)
    for fn, kwargs in steps:
        getattr(prune, fn)(ours, "weight", **kwargs)
        getattr(TP, fn)(theirs, "weight", **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert_close(ours.weight_mask, theirs.weight_mask, "mask")
    assert (
        type(ours._forward_pre_hooks[next(iter(ours._forward_pre_hooks))]).__name__
        == type(next(iter(theirs._forward_pre_hooks.values()))).__name__
    )
    check_module(ours, theirs, [rng.standard_normal((2, 3, 4, 4)).astype(np.float32)], "cpu")
    assert prune.is_pruned(ours)
    prune.remove(ours, "weight")
    TP.remove(theirs, "weight")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_close(ours.weight, theirs.weight, "after remove")
    assert not prune.is_pruned(ours)


def test_custom_mask_and_importance_scores(rng):
    ours, theirs = _pair("Linear", 4, 3)
    mask = (rng.random((3, 4)) > 0.5).astype(np.float32)
    prune.custom_from_mask(ours, "bias", to_ember(mask[:, 0]))
    TP.custom_from_mask(theirs, "bias", to_torch(mask[:, 0]))
    scores = rng.random((3, 4)).astype(np.float32)
    prune.l1_unstructured(ours, "weight", 0.5, importance_scores=to_ember(scores))
    TP.l1_unstructured(theirs, "weight", 0.5, importance_scores=to_torch(scores))
    assert_close(ours.weight_mask, theirs.weight_mask, "mask by importance")
    assert_close(ours.bias_mask, theirs.bias_mask, "custom mask")
    check_module(ours, theirs, [rng.standard_normal((2, 4)).astype(np.float32)], "cpu")


def test_global_unstructured(rng):
    ours = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.Linear(6, 2))
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 2))
    copy_state(theirs, ours)
    prune.l1_unstructured(ours[0], "weight", 3)
    TP.l1_unstructured(theirs[0], "weight", 3)
    for lib, model, method in (
        (prune, ours, prune.L1Unstructured),
        (TP, theirs, TP.L1Unstructured),
    ):
        params = [(model[0], "weight"), (model[1], "weight"), (model[1], "bias")]
        lib.global_unstructured(params, pruning_method=method, amount=0.4)
    for i in (0, 1):
        assert_close(ours[i].weight_mask, theirs[i].weight_mask, f"{i}")
    check_module(ours, theirs, [rng.standard_normal((3, 4)).astype(np.float32)], "cpu")
    with pytest.raises(TypeError, match='Only "unstructured"'):
        prune.global_unstructured([(ours[0], "bias")], prune.LnStructured, amount=1, n=1, dim=0)


@pytest.mark.parametrize(
    "fn, kwargs, pruned",
    [
        ("random_unstructured", {"amount": 0.25}, 15),
        ("random_unstructured", {"amount": 7}, 7),
        ("random_structured", {"amount": 2, "dim": 0}, 24),
        ("random_structured", {"amount": 0.5, "dim": 1}, 30),
    ],
)
def test_random_pruning_counts(fn, kwargs, pruned):
    layer = ember.nn.Conv1d(4, 5, 3)  # 60 weights
    getattr(prune, fn)(layer, "weight", **kwargs)
    assert int((layer.weight_mask == 0).sum()) == pruned
    assert bool(((layer.weight == 0) | (layer.weight_mask == 1)).all())
    if fn == "random_structured":
        dim = kwargs["dim"]
        others = tuple(d for d in range(3) if d != dim)
        sums = layer.weight_mask.sum(others).numpy()
        assert set(np.unique(sums)) <= {0.0, 60 / layer.weight.shape[dim]}


def test_prune_errors():
    layer = ember.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(layer, "weight", 1.5)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(layer, "weight", 7)
    assert "weight" in dict(layer.named_parameters())  # the failed call left it as it was
    with pytest.raises(ValueError, match="Structured pruning can only be applied"):
        prune.ln_structured(layer, "bias", 1, 2, 0)
    with pytest.raises(ValueError, match="has to be pruned before pruning can be removed"):
        prune.remove(layer, "weight")
