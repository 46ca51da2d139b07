"""Cross-entropy's backward on every device (feature ``row_index``): the one-hot gradient
(``full(0)``, ``scatter_add`` of one value per row along the last dim) and the log-softmax
backward that reads it run as one row kernel of the device's generator (xpu, CUDA/ROCm:
ember_backend_gpu/fused/rows.py; the CPU's fused_rows.py).

Run with ``EMBER_TEST_DEVICES=cpu,xpu`` (PoCL) and ``EMBER_CUDA_EMULATOR=1
EMBER_TEST_DEVICES=cuda``. Values against PyTorch, an index out of range raises eager's
IndexError on that device (the kernel checks its indices into the device's status word), and a
compiled model's 10-step float64 training trajectory follows eager ember's and PyTorch's with
the backward's one-hot chain one kernel; the training pair is built on every device and its
gradients equal eager's and PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import logs

from .test_fusion_ce import _one_hot, _trajectories
from .test_fusion_ce_forward import _kernels
from .test_fusion_devices import _generates

MARKER = {"cpu": "ember_fused(intptr_t", "xpu": "kernel void em_fused(",
          "cuda": "EM_KERNEL em_fused("}  # fmt: skip


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _replayed(fn, tensors, capsys, **kw):
    """The compiled function's replayed result (no grad), the fused kernels of its program
    and of its composites' sub-programs, and the fusion log."""
    compiled = ember.compile(lambda *a: fn(ember, *a, **kw))
    logs.set_logs(fusion=True)
    try:
        with ember.no_grad():
            compiled(*tensors)
            out = compiled(*tensors)
    finally:
        logs.set_logs(fusion=False)
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    kernels = list({id(k): k for k in _kernels(entry.region.fast)}.values())
    return compiled, out, kernels, capsys.readouterr().err


@pytest.mark.parametrize("classes", [13, 300])
def test_one_hot_chain_is_one_kernel_and_checks_its_indices(classes, device, capsys):
    rng = np.random.default_rng(0)
    x, src = rng.standard_normal((6, classes)), rng.standard_normal((6, 1))
    index = rng.integers(0, classes, (6, 1))
    ours = [ember.tensor(a, device=device) for a in (x, index, src)]
    compiled, out, kernels, err = _replayed(_one_hot, ours, capsys)
    if _generates(device):
        assert "row_index)" in err and "declined with features" not in err, err
        (kernel,) = kernels
        assert MARKER[device] in kernel.source, kernel.source
    want = _one_hot(torch, torch.tensor(x), torch.tensor(index), torch.tensor(src))
    np.testing.assert_allclose(out.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    index[2, 0] = classes  # out of range: the kernel reports it, the call raises eager's error
    if device != "cpu":  # two: the GPU kernels' rows report in no fixed order, yet the error
        index[4, 0] = -1  # names the first, as eager's (the CPU kernel names the last it saw)
    bad = [ember.tensor(a, device=device) for a in (x, index, src)]
    with pytest.raises(IndexError) as eager:
        _one_hot(ember, *bad)
    with pytest.raises(IndexError) as fused, ember.no_grad():
        compiled(*bad)
    assert str(fused.value) == str(eager.value)
    with ember.no_grad():  # the status word was reset: a good call runs on
        again = compiled(*ours)
    np.testing.assert_allclose(again.cpu().numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def _ce_backward(lib, logp, target, g):
    """Cross-entropy's backward program as the training pair holds it: nll_loss's one-hot
    gradient, then log_softmax's ``grad - exp(logp) * sum(grad, -1)``."""
    grad = lib.full(tuple(logp.shape), 0.0, dtype=logp.dtype, device=logp.device)
    grad = grad.scatter_add(-1, target, g)
    return grad - lib.exp(logp) * grad.sum(-1, keepdim=True)


@pytest.mark.parametrize("classes", [11, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cross_entropy_backward_chain_is_one_kernel(classes, dtype, device, capsys):
    rng = np.random.default_rng(2)
    logp = np.log(rng.dirichlet(np.ones(classes), 9)).astype(dtype)
    target, g = rng.integers(0, classes, (9, 1)), (-rng.random((9, 1))).astype(dtype)
    ours = [ember.tensor(a, device=device) for a in (logp, target, g)]
    _compiled, out, kernels, err = _replayed(_ce_backward, ours, capsys)
    if _generates(device):
        assert "fused: full, scatter_add, exp, sum, mul, sub (" in err, err
        assert "row_index, row_steps)" in err and "declined with features" not in err, err
        (kernel,) = kernels
        assert MARKER[device] in kernel.source, kernel.source
    want = _ce_backward(torch, *[torch.tensor(a) for a in (logp, target, g)]).numpy()
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=tol, atol=tol)
    eager = _ce_backward(ember, *ours).cpu().numpy()
    np.testing.assert_allclose(out.cpu().numpy(), eager, rtol=tol, atol=tol)


def test_training_with_cross_entropy_on_the_device(device):
    """The trajectory on every device, through the compiled pair (on xpu and the CUDA emulator
    too: masked_fill's fill value, a CPU constant copied to the device, is a factory's product
    the joint trace bakes in); the backward's one-hot chain as one kernel."""
    losses, joint = _trajectories(ember.float64, steps=10, device=device)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)
    np.testing.assert_allclose(losses[0], losses[2], rtol=1e-10)
    assert losses[0][-1] < 0.6 * losses[0][0]  # it trains (2.43 to 1.25 in 10 steps)
    assert joint is not None  # the pair is built, not autograd recording each op
    if not _generates(device):
        return
    kernels = list({id(k): k for k in _kernels(joint.backward)}.values())
    # the one-hot gradient and the log-softmax backward: one kernel, no scatter_add call
    assert any("j ==" in k.source and MARKER[device] in k.source for k in kernels), kernels
    ops = [v.name for k, v in joint.backward.__globals__.items() if k.startswith("OP")]
    assert "exp" not in ops and "scatter_add" not in ops and "full" not in ops, ops


def _scaled_loss(lib, x, w, b, target):
    return lib.nn.functional.cross_entropy(x * w + b, target)


@pytest.mark.parametrize("classes", [11, 300])
def test_training_pair_gradients_equal_eager_and_torch(classes, device, capsys):
    """One compiled call with gradients: the pair is built (no "no compiled backward" in the
    graphs log), its forward holds the loss's row tail and its backward the one-hot chain as
    fused kernels, and the float64 gradients of x, w and b equal eager ember's and PyTorch's."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((9, classes)), rng.standard_normal(classes), rng.random(classes)]
    target = rng.integers(0, classes, 9)
    target[[2, 5]] = -100  # ignored rows: no gradient, not in the mean

    def ours():
        leaves = [ember.tensor(a, device=device, requires_grad=True) for a in arrays]
        return leaves, ember.tensor(target, device=device)

    compiled = ember.compile(lambda *a: _scaled_loss(ember, *a))
    logs.set_logs(graphs=True, fusion=True)
    try:
        for _ in range(2):  # the capture, then the replay that builds the pair
            leaves, t = ours()
            loss = compiled(*leaves, t)
            loss.backward()
    finally:
        logs.set_logs(graphs=False, fusion=False)
    err = capsys.readouterr().err
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    assert entry.region.joint is not None and "no compiled backward" not in err, err
    got = [leaf.grad.cpu().numpy() for leaf in leaves]
    eager_leaves, t = ours()
    eager = _scaled_loss(ember, *eager_leaves, t)
    eager.backward()
    np.testing.assert_allclose(loss.item(), eager.item(), rtol=1e-13)
    twins = [torch.tensor(a, requires_grad=True) for a in arrays]
    want = _scaled_loss(torch, *twins, torch.tensor(target))
    want.backward()
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-12)
    for g, e, w in zip(got, eager_leaves, twins, strict=True):
        np.testing.assert_allclose(g, e.grad.cpu().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-10, atol=1e-12)
    if _generates(device):
        assert "row_tail)" in err and "declined with features" not in err, err
        assert "fused: full, scatter_add, exp, sum, mul, sub (" in err, err
        kernels = list({id(k): k for k in _kernels(entry.region.joint.backward)}.values())
        assert any("j ==" in k.source and MARKER[device] in k.source for k in kernels), kernels


def _forward(lib, x, target, **kw):
    return lib.nn.functional.cross_entropy(x * 2.0, target, **kw)


def _compiled_loss(x, target, capsys, **kw):
    _compiled, out, kernels, err = _replayed(_forward, (x, target), capsys, **kw)
    return out, kernels, err


def _targets(rows, classes, dtype, ignored=(3, 8, 20)):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, classes)).astype(dtype)
    target = rng.integers(0, classes, rows)
    target[[i for i in ignored if i < rows]] = -100
    return x, target


@pytest.mark.parametrize("classes", [13, 300])
@pytest.mark.parametrize(("dtype", "rtol"), [(np.float64, 1e-13), (np.float32, 1e-6)])
def test_cross_entropy_forward_is_one_row_kernel(classes, dtype, rtol, device, capsys):
    """log_softmax, the target's mask, the gather and the mean (feature ``row_tail``): one
    call of the device's generator (its rows, then the sums over every row in a second
    kernel of one work-group, in a fixed order), equal to eager's and PyTorch's."""
    x, target = _targets(37, classes, dtype)
    ours = (ember.tensor(x, device=device), ember.tensor(target, device=device))
    out, kernels, err = _compiled_loss(*ours, capsys)
    if _generates(device):
        assert "row_tail)" in err and "declined with features" not in err, err
        (kernel,) = kernels
        assert MARKER[device] in kernel.source, kernel.source
    np.testing.assert_allclose(out.item(), _forward(ember, *ours).item(), rtol=rtol)
    theirs = _forward(torch, torch.tensor(x), torch.tensor(target)).item()
    np.testing.assert_allclose(out.item(), theirs, rtol=10 * rtol)
    again, _, _ = _compiled_loss(*ours, capsys)  # deterministic: the same bits at every call
    assert again.item() == out.item()


def test_cross_entropy_forward_target_out_of_range(device):
    x, target = _targets(37, 13, np.float64)
    good = (ember.tensor(x, device=device), ember.tensor(target, device=device))
    compiled = ember.compile(lambda a, t: _forward(ember, a, t))
    target[5] = 13
    if device != "cpu":  # two: the first is named (the CPU kernel names the last it saw)
        target[30] = -3
    bad = (ember.tensor(x, device=device), ember.tensor(target, device=device))
    with pytest.raises(IndexError) as eager:
        _forward(ember, *bad)
    with pytest.raises(IndexError) as fused, ember.no_grad():
        compiled(*good)
        compiled(*bad)
    assert str(fused.value) == str(eager.value)
    with ember.no_grad():
        again = compiled(*good)
    assert np.isfinite(again.item())


def test_cross_entropy_forward_every_target_ignored(device, capsys):
    x, target = _targets(4, 13, np.float64, ignored=range(4))
    ours = (ember.tensor(x, device=device), ember.tensor(target, device=device))
    out, _, _ = _compiled_loss(*ours, capsys)
    assert np.isnan(out.item())


@pytest.mark.parametrize(
    "options",
    [{"reduction": "sum"}, {"reduction": "none"}, {"label_smoothing": 0.1}],
    ids=["sum", "none", "smoothing"],
)
def test_cross_entropy_forward_other_forms(options, device, capsys):
    x, target = _targets(37, 13, np.float64)
    ours = (ember.tensor(x, device=device), ember.tensor(target, device=device))
    out, _, _ = _compiled_loss(*ours, capsys, **options)
    theirs = _forward(torch, torch.tensor(x), torch.tensor(target), **options).numpy()
    np.testing.assert_allclose(out.cpu().numpy(), theirs, rtol=1e-12, atol=1e-14)
    eager = _forward(ember, *ours, **options).cpu().numpy()
    np.testing.assert_allclose(out.cpu().numpy(), eager, rtol=1e-13, atol=1e-15)
