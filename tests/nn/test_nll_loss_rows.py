"""nll_loss as ATen's nll_loss_forward / nll_loss_backward rows (issue 20): values, gradients,
double backward, graph and errors against PyTorch, on every test device (the CPU runs the
kernels, the others the decompositions)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatcher.optable import OPS

from .oracle import assert_close, to_ember, to_torch

torch = pytest.importorskip("torch")

# (input shape, ignore_index): (N, C), nll_loss2d's (N, C, d...), unbatched (C,)
SHAPES = [((8, 32), -100), ((5, 4), 1), ((3, 4, 5), 2), ((2, 3, 2, 2), -100), ((2, 3, 1, 2, 2), 0),
          ((6,), -100), ((6,), 3)]  # fmt: skip
REDUCTIONS = ["mean", "sum", "none"]


def _case(rng, shape, ignore, dtype, weighted):
    classes = shape[1] if len(shape) > 1 else shape[0]
    target_shape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    x = rng.standard_normal(shape).astype(dtype)
    target = rng.integers(0, classes, target_shape).astype(np.int64)
    if 0 <= ignore < classes and target.ndim:
        target.flat[::3] = ignore
    weight = rng.uniform(0.5, 2.0, classes).astype(dtype) if weighted else None
    return x, target, weight


def _both(x, target, weight, device):
    ours = (to_ember(x, device, True), to_ember(target, device),
            None if weight is None else to_ember(weight, device))  # fmt: skip
    theirs = (to_torch(x, True), to_torch(target), None if weight is None else to_torch(weight))
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape,ignore", SHAPES)
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_values_and_gradients(device, rng, fn, shape, ignore, weighted, reduction, dtype):
    x, target, weight = _case(rng, shape, ignore, dtype, weighted)
    (xe, te, we), (xt, tt, wt) = _both(x, target, weight, device)
    ours = getattr(ember.nn.functional, fn)(xe, te, weight=we, ignore_index=ignore,
                                            reduction=reduction)  # fmt: skip
    theirs = getattr(torch.nn.functional, fn)(xt, tt, weight=wt, ignore_index=ignore,
                                              reduction=reduction)  # fmt: skip
    assert_close(ours, theirs, f"{fn} value", dtype=dtype)
    upstream = rng.standard_normal(tuple(theirs.shape)).astype(dtype)
    ours.backward(to_ember(upstream, device))
    theirs.backward(to_torch(upstream))
    assert_close(xe.grad, xt.grad, f"{fn} grad", dtype=dtype)
    if len(shape) <= 2 or reduction != "none":  # PyTorch views nll_loss2d's (N, d1...) losses
        assert ours.grad_fn.name() == theirs.grad_fn.name()


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_label_smoothing(device, rng, smoothing):
    x, target, weight = _case(rng, (4, 5, 3), 1, "float64", True)
    (xe, te, we), (xt, tt, wt) = _both(x, target, weight, device)
    ours = ember.nn.functional.cross_entropy(xe, te, we, ignore_index=1, label_smoothing=smoothing)
    theirs = torch.nn.functional.cross_entropy(xt, tt, wt, ignore_index=1,
                                               label_smoothing=smoothing)  # fmt: skip
    assert_close(ours, theirs, "value", dtype="float64")
    ours.backward()
    theirs.backward()
    assert_close(xe.grad, xt.grad, "grad", dtype="float64")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,ignore", [((4, 5), 2), ((2, 3, 4), -100), ((5,), -100)])
def test_double_backward(device, rng, shape, ignore, reduction):
    """cross_entropy's input gradient differentiated again (nll_loss_backward's own formula,
    then log_softmax's), and nll_loss's gradient with respect to its upstream gradient."""
    x, target, weight = _case(rng, shape, ignore, "float64", True)
    (xe, te, we), (xt, tt, wt) = _both(x, target, weight, device)
    results = []
    for lib, (xx, tg, w) in ((ember, (xe, te, we)), (torch, (xt, tt, wt))):
        loss = lib.nn.functional.cross_entropy(xx, tg, w, ignore_index=ignore, reduction=reduction)
        up = lib.ones_like(loss).requires_grad_() if lib is torch else None
        if up is None:
            up = ember.ones(tuple(loss.shape), dtype=loss.dtype, device=device).requires_grad_()
        (g,) = lib.autograd.grad(loss, xx, up, create_graph=True)
        probe = (lib.arange(g.numel(), dtype=g.dtype) / 7).reshape(g.shape)
        if lib is ember:
            probe = probe.to(device)
        second = lib.autograd.grad((g * g * probe).sum(), (xx, up))
        results.append((g, *second))
    for ours, theirs, what in zip(results[0], results[1], ("grad", "d/dx", "d/dgrad")):
        assert_close(ours, theirs, what, dtype="float64")


def test_gradcheck_double(device, rng):
    x, target, weight = _case(rng, (3, 4, 2), 1, "float64", True)
    xe, te, we = to_ember(x, device, True), to_ember(target, device), to_ember(weight, device)

    def f(v):
        return ember.nn.functional.cross_entropy(v, te, we, ignore_index=1)

    assert ember.autograd.gradcheck(f, (xe,))
    assert ember.autograd.gradgradcheck(f, (xe,))


def test_graph_and_saved(rng):
    x, target, weight = _case(rng, (5, 4), 2, "float32", True)
    (xe, te, we), (xt, tt, wt) = _both(x, target, weight, "cpu")
    ours = ember.nn.functional.cross_entropy(xe, te, we, ignore_index=2)
    theirs = torch.nn.functional.cross_entropy(xt, tt, wt, ignore_index=2)
    node, their_node = ours.grad_fn, theirs.grad_fn
    assert node.name() == their_node.name() == "NllLossBackward0"
    assert [n.name() for n, _ in node.next_functions] == [
        n.name() for n, _ in their_node.next_functions
    ]
    for name in ("reduction", "ignore_index"):
        assert getattr(node, f"_saved_{name}") == getattr(their_node, f"_saved_{name}")
    for name in ("total_weight", "target", "weight", "self"):
        assert_close(getattr(node, f"_saved_{name}"), getattr(their_node, f"_saved_{name}"), name)
    (g,) = ember.autograd.grad(ours, xe, create_graph=True)
    (gt,) = torch.autograd.grad(theirs, xt, create_graph=True)
    assert g.grad_fn.name() == gt.grad_fn.name()


def test_rows_match_aten(rng):
    """nll_loss_forward and nll_loss_backward as torch.ops.aten's (nll_loss2d's for 4-d
    inputs), both outputs."""
    for shape, reduction in (((4, 3), 1), ((5, 3), 2), ((3,), 0), ((2, 3, 2, 4), 1)):
        x, target, weight = _case(rng, shape, 1, "float64", True)
        ours = OPS["nll_loss_forward"](to_ember(x), to_ember(target), to_ember(weight),
                                       reduction, 1)  # fmt: skip
        aten = torch.ops.aten
        forward, backward = (
            (aten.nll_loss2d_forward, aten.nll_loss2d_backward)
            if len(shape) == 4
            else (aten.nll_loss_forward, aten.nll_loss_backward)
        )
        theirs = forward(to_torch(x), to_torch(target), to_torch(weight), reduction, 1)
        for a, b in zip(ours, theirs):
            assert_close(a, b, "forward", dtype="float64")
        g = np.asarray(rng.standard_normal(tuple(theirs[0].shape)))
        ours_b = OPS["nll_loss_backward"](to_ember(g), to_ember(x), to_ember(target),
                                          to_ember(weight), reduction, 1, ours[1])  # fmt: skip
        theirs_b = backward(to_torch(g), to_torch(x), to_torch(target), to_torch(weight),
                            reduction, 1, theirs[1])  # fmt: skip
        assert_close(ours_b, theirs_b, "backward", dtype="float64")


@pytest.mark.parametrize(
    "target,error,match",
    [
        (np.array([0, 1, 7]), IndexError, "out of"),
        (np.array([0, -1, 2]), IndexError, "out of"),
        (np.array([0.0, 1.0, 2.0]), RuntimeError, "integer"),
        (np.array([0, 1]), ValueError, "Expected target size"),
    ],
)
def test_errors(device, target, error, match):
    x = ember.randn(3, 4, device=device)
    with pytest.raises(error, match=match):
        ember.nn.functional.nll_loss(x, to_ember(target, device))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,ignore", [((5, 4), 1), ((2, 3, 4), -100), ((4,), -100)])
def test_weight_gradient(device, rng, shape, ignore, reduction):
    """The class weights' gradient (PyTorch refuses it; ember runs its composite then), against
    the same sum built from torch's differentiable parts."""
    x, target, weight = _case(rng, shape, ignore, "float64", True)
    xe, te, we = to_ember(x, device, True), to_ember(target, device), to_ember(weight, device, True)
    ours = ember.nn.functional.nll_loss(xe, te, we, ignore_index=ignore, reduction=reduction)
    xt, tt, wt = to_torch(x, True), to_torch(target), to_torch(weight, True)
    batched_x, batched_t = (xt[None], tt[None]) if xt.ndim == 1 else (xt, tt)
    valid = batched_t != ignore
    safe = batched_t.masked_fill(~valid, 0)
    w = wt[safe] * valid
    losses = -batched_x.gather(1, safe.unsqueeze(1)).squeeze(1) * w
    theirs = {"mean": losses.sum() / w.sum(), "sum": losses.sum(), "none": losses}[reduction]
    if reduction == "none" and xt.ndim == 1:
        theirs = theirs[0]
    assert_close(ours, theirs, "value", dtype="float64")
    upstream = rng.standard_normal(tuple(theirs.shape))
    ours.backward(to_ember(upstream, device))
    theirs.backward(to_torch(upstream))
    assert_close(we.grad, wt.grad, "weight grad", dtype="float64")
    assert_close(xe.grad, xt.grad, "input grad", dtype="float64")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes(device, rng, dtype):
    """float16/bfloat16 run the decomposition (no kernel): values and gradients near torch's."""
    x, target, _ = _case(rng, (6, 5), 1, "float32", False)
    xe = to_ember(x, device).to(getattr(ember, dtype)).requires_grad_()
    xt = to_torch(x).to(getattr(torch, dtype)).requires_grad_()
    ours = ember.nn.functional.cross_entropy(xe, to_ember(target, device), ignore_index=1)
    theirs = torch.nn.functional.cross_entropy(xt, to_torch(target), ignore_index=1)
    ours.backward()
    theirs.backward()
    for a, b in ((ours, theirs), (xe.grad, xt.grad)):
        np.testing.assert_allclose(a.float().detach().cpu().numpy(), b.float().detach().numpy(),
                                   rtol=2e-2, atol=2e-2)  # fmt: skip
