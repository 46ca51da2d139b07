"""The new losses refuse what PyTorch refuses, with its exception types and messages, and take
what it takes (callables as distances, legacy reduction flags, lengths as lists or tensors)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .oracle import assert_close, to_ember, to_torch

torch = pytest.importorskip("torch")


def _both(fn_name, *arrays, **kwargs):
    """(ours, theirs) results of F.<fn_name> on the same arrays."""
    ours = getattr(F, fn_name)(*[to_ember(a) for a in arrays], **kwargs)
    theirs = getattr(torch.nn.functional, fn_name)(*[to_torch(a) for a in arrays], **kwargs)
    return ours, theirs


ERRORS = [
    ("multi_margin_loss", [(3, 4), np.array([0, 1, 5])], {}, RuntimeError, "target out of range"),
    ("multi_margin_loss", [(3, 4), np.array([0, 1])], {}, RuntimeError, "Expected target size"),
    ("multi_margin_loss", [(3, 4), np.array([0, 1, 2])], {"p": 3}, ValueError, "only p == 1"),
    (
        "multilabel_margin_loss",
        [(3, 4), np.zeros((3, 3), np.int64)],
        {},
        RuntimeError,
        "inconsistent target size",
    ),
    ("multilabel_margin_loss", [(3, 4), np.full((3, 4), 9)], {}, RuntimeError, "out of range"),
    ("margin_ranking_loss", [(3, 4), (4,), (3, 4)], {}, RuntimeError, "same dimension"),
    ("triplet_margin_loss", [(3, 4), (3, 4), (4,)], {}, RuntimeError, "same number of dim"),
    ("triplet_margin_loss", [(3, 4), (3, 4), (3, 4)], {"margin": 0}, ValueError, "margin must"),
    ("gaussian_nll_loss", [(3, 4), (3, 4), np.ones((3, 2))], {}, ValueError, "incorrect size"),
    ("gaussian_nll_loss", [(3, 4), (3, 4), -np.ones((3, 4))], {}, ValueError, "negative entry"),
    ("poisson_nll_loss", [(3, 4), (3, 4)], {"reduction": "avg"}, ValueError, "not a valid"),
]


@pytest.mark.parametrize("name, arrays, kwargs, error, match", ERRORS)
def test_loss_errors_as_torch(rng, name, arrays, kwargs, error, match):
    arrays = [
        a if isinstance(a, np.ndarray) else rng.standard_normal(a).astype(np.float32)
        for a in arrays
    ]
    arrays = [a.astype(np.float32) if a.dtype == np.float64 else a for a in arrays]
    with pytest.raises(error, match=match):
        getattr(torch.nn.functional, name)(*[to_torch(a) for a in arrays], **kwargs)
    with pytest.raises(error, match=match):
        getattr(F, name)(*[to_ember(a) for a in arrays], **kwargs)


CTC_ERRORS = [
    ([7, 5], [3, 2], {}, "input_lengths to have value at most 6"),
    ([6, 5], [4, 2], {}, "size at least 4 at dimension 1"),
    ([6], [3, 2], {}, "input_lengths must be of size batch_size"),
    ([6, 5], [3, 2], {"blank": 4}, "blank must be in label range"),
]


@pytest.mark.parametrize("input_lengths, target_lengths, kwargs, match", CTC_ERRORS)
def test_ctc_errors(rng, input_lengths, target_lengths, kwargs, match):
    log_probs = rng.standard_normal((6, 2, 4)).astype(np.float32)
    targets = np.array([[1, 1, 2], [3, 2, 1]])
    for fn, convert in ((torch.nn.functional.ctc_loss, to_torch), (F.ctc_loss, to_ember)):
        with pytest.raises(RuntimeError, match=match):
            fn(convert(log_probs), convert(targets), input_lengths, target_lengths, **kwargs)


def test_ctc_lengths_as_tensors_and_infinite_loss(rng):
    log_probs = rng.standard_normal((5, 2, 4)).astype(np.float32)
    targets = np.array([[1, 1, 1], [1, 2, 3]])
    lengths = (np.array([3, 5]), np.array([3, 3]))
    ours, theirs = _both("ctc_loss", log_probs, targets, *lengths, reduction="none")
    assert np.isinf(ours.numpy()[0]) and ours.numpy()[0] > 0
    assert_close(ours, theirs, "ctc with an impossible alignment")


def test_triplet_with_a_distance_function(rng):
    arrays = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(3)]
    ours = ember.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1 - F.cosine_similarity(a, b), swap=True
    )
    theirs = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=lambda a, b: 1 - torch.nn.functional.cosine_similarity(a, b), swap=True
    )
    assert_close(ours(*map(to_ember, arrays)), theirs(*map(to_torch, arrays)), "loss")
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        ember.nn.TripletMarginWithDistanceLoss(margin=0)


def test_legacy_reduction_flags(rng):
    x, y = rng.standard_normal((3, 4)).astype(np.float32), np.sign(rng.standard_normal((3, 4)))
    y = y.astype(np.float32)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        ours = ember.nn.SoftMarginLoss(size_average=False)(to_ember(x), to_ember(y))
    with pytest.warns(UserWarning):
        theirs = torch.nn.SoftMarginLoss(size_average=False)(to_torch(x), to_torch(y))
    assert_close(ours, theirs, "legacy size_average=False")


def test_new_backward_formulas_pass_gradcheck(rng):
    """The hand-written backwards (CTC's alpha-beta posteriors, the chunked linear cross
    entropy) against finite differences in float64. CTC's gradient follows PyTorch's convention
    (exact through a log_softmax), so it is checked with respect to the logits."""
    from ember.autograd import gradcheck
    from ember.nn.functional.linear_loss import LinearCrossEntropyOptions

    logits = ember.tensor(rng.standard_normal((6, 2, 4)), requires_grad=True)
    targets = ember.tensor([[1, 1, 2], [3, 2, 0]])

    def ctc(x):
        return F.ctc_loss(x.log_softmax(2), targets, [6, 5], [3, 2], reduction="sum")

    assert gradcheck(ctc, (logits,))
    x = ember.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    weight = ember.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    bias = ember.tensor(rng.standard_normal(4), requires_grad=True)
    labels = ember.tensor([0, 3, 1, 1, 2])
    options = LinearCrossEntropyOptions(batch_chunk_size=2)

    def chunked(x, w, b):
        return F.linear_cross_entropy(x, w, labels, linear_bias=b, options=options)

    assert gradcheck(chunked, (x, weight, bias))
