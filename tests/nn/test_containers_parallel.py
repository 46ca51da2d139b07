"""AdaptiveLogSoftmaxWithLoss, LinearCrossEntropyLoss (reference and chunked paths),
Container, DataParallel (the module itself without accelerators) and
nn.utils.stateless.functional_call, against PyTorch."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from ember.nn.functional.linear_loss import LinearCrossEntropyOptions

from .oracle import assert_close, check_module, copy_state, to_ember, to_torch

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "cutoffs, head_bias, shape",
    [([3, 6], False, (8, 5)), ([2], True, (6, 5)), ([4, 7, 9], False, (5,))],
    ids=["two-tails", "one-tail-bias", "unbatched"],
)
def test_adaptive_log_softmax(device, rng, cutoffs, head_bias, shape):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(5, 10, cutoffs, div_value=2.0, head_bias=head_bias)
    ours = ember.nn.AdaptiveLogSoftmaxWithLoss(5, 10, cutoffs, div_value=2.0, head_bias=head_bias)
    copy_state(theirs, ours)
    ours.to(device)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal(shape).astype(np.float32)
    target = rng.integers(0, 10, size=shape[:-1]).astype(np.int64)
    if target.ndim:
        target[:3] = [0, cutoffs[0], 9]  # the head and a tail each get a row
    check_module(ours, theirs, [x, target], device)
    batch = x if x.ndim == 2 else x[None]
    assert_close(
        ours.log_prob(to_ember(batch, device)), theirs.log_prob(to_torch(batch)), "log_prob"
    )
    assert (
        ours.predict(to_ember(batch, device)).cpu().numpy()
        == theirs.predict(to_torch(batch)).numpy()
    ).all()


def test_adaptive_log_softmax_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        ember.nn.AdaptiveLogSoftmaxWithLoss(5, 10, [6, 3])
    layer = ember.nn.AdaptiveLogSoftmaxWithLoss(5, 10, [3])
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 9\\]"):
        layer(ember.randn(2, 5), ember.tensor([1, 12]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        layer(ember.randn(2, 5), ember.zeros(2, 2, dtype=ember.int64))


LCE = [
    ({}, (6, 4), (6,)),
    ({"bias": True, "reduction": "sum", "ignore_index": 1}, (6, 4), (6,)),
    ({"out_features": (3,), "reduction": "none"}, (5, 4), (5, 3)),
    ({"label_smoothing": 0.2, "bias": True}, (4,), ()),
]


@pytest.mark.parametrize("kwargs, shape, target_shape", LCE)
def test_linear_cross_entropy_loss(device, rng, kwargs, shape, target_shape):
    torch.manual_seed(0)
    theirs = torch.nn.LinearCrossEntropyLoss(4, 7, **kwargs)
    ours = ember.nn.LinearCrossEntropyLoss(4, 7, **kwargs)
    copy_state(theirs, ours)
    ours.to(device)
    assert repr(ours) == repr(theirs)
    x = rng.standard_normal(shape).astype(np.float32)
    target = rng.integers(0, 7, size=target_shape).astype(np.int64)
    check_module(ours, theirs, [x, target], device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 3, 16])
def test_linear_cross_entropy_chunked_matches_reference(rng, reduction, chunk):
    from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions as Theirs

    x = rng.standard_normal((10, 4))
    weight, bias = rng.standard_normal((9, 4)), rng.standard_normal(9)
    target = rng.integers(0, 9, size=10)
    target[3] = -100
    class_weight = rng.random(9)

    def ours(x, w, b):
        return ember.nn.functional.linear_cross_entropy(
            x,
            w,
            to_ember(target),
            linear_bias=b,
            weight=to_ember(class_weight),
            reduction=reduction,
            options=LinearCrossEntropyOptions(batch_chunk_size=chunk),
        )

    def theirs(x, w, b):
        return torch.nn.functional.linear_cross_entropy(
            x,
            w,
            to_torch(target),
            linear_bias=b,
            weight=to_torch(class_weight),
            reduction=reduction,
            options=Theirs(batch_chunk_size=chunk, chunking_method=None),
        )

    check_module(ours, theirs, [x, weight, bias], "cpu", dtype="float64")


def test_container_and_data_parallel(rng, monkeypatch):
    # torch's DataParallel without accelerators (where torch has CUDA it would move to cuda:0)
    module = importlib.import_module("torch.nn.parallel.data_parallel")
    monkeypatch.setattr(module, "_get_available_device_type", lambda: None)
    with pytest.warns(FutureWarning, match="nn.Container"):
        box = ember.nn.Container(a=ember.nn.Linear(2, 3))
    assert repr(box) == repr(torch.nn.Container(a=torch.nn.Linear(2, 3)))
    torch.manual_seed(0)
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    ours = ember.nn.DataParallel(ember.nn.Linear(3, 2))
    copy_state(theirs, ours)
    assert list(ours.state_dict()) == ["module.weight", "module.bias"]
    assert repr(ours) == repr(theirs)
    check_module(ours, theirs, [rng.standard_normal((4, 3)).astype(np.float32)], "cpu")


def test_functional_call(rng):
    from ember.nn.utils.stateless import functional_call

    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    original = net[0].weight
    values = {name: p.detach().clone().requires_grad_() for name, p in net.named_parameters()}
    x = ember.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    with pytest.warns(FutureWarning, match="functional_call"):
        out = functional_call(net, values, (x,))
    np.testing.assert_allclose(out.detach().numpy(), net(x).detach().numpy(), rtol=1e-6)
    out.sum().backward()
    assert values["0.weight"].grad is not None and original.grad is None
    assert net[0].weight is original  # restored
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="Missing key\\(s\\)"):
        functional_call(net, {"0.weight": values["0.weight"]}, (x,), strict=True)


def test_functional_call_ties_weights():
    from ember.nn.utils.stateless import functional_call

    net = ember.nn.Sequential(ember.nn.Linear(2, 2, bias=False), ember.nn.Linear(2, 2, bias=False))
    net[1].weight = net[0].weight  # tied
    zero = ember.zeros(2, 2)
    with pytest.warns(FutureWarning):
        assert bool((functional_call(net, {"0.weight": zero}, (ember.ones(1, 2),)) == 0).all())
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="which are tied"):
        functional_call(net, {"0.weight": zero, "1.weight": ember.ones(2, 2)}, (ember.ones(1, 2),))
