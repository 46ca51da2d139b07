"""Cross-entropy's forward as one row kernel (compiler/fusion_tail.py, the CPU plugin's
fused_tail.py): log_softmax, the gather of the targets, the ignore_index mask and the mean in
one call, without grad (the loss's lowered sub-program) and in a training pair's forward
program. Values against eager ember and PyTorch (an out-of-range target and every target
ignored, on every device: test_fusion_ce_devices.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .test_fusion_ce import _trajectories

pytest.importorskip("ember_backend_cpu.fused")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _loss(lib, x, target, ignore_index=-100):
    return lib.nn.functional.cross_entropy(x * 2.0, target, ignore_index=ignore_index)


def _data(dtype, rows=37, classes=13, ignored=(3, 8, 20)):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((rows, classes)).astype(dtype)
    target = rng.integers(0, classes, rows)
    target[list(ignored)] = -100
    return x, target


def _kernels(fn) -> list:
    """The fused kernels of a program and of its composites' sub-programs."""
    found = []
    for name, value in fn.__globals__.items():
        if name.startswith("FUSED"):
            found.append(value)
        elif name.startswith("SUB"):
            found += _kernels(value)
    return found


def _ours(x, target):
    return _loss(ember, x, target)


def _compiled_no_grad(x, target):
    compiled = ember.compile(_ours)
    with ember.no_grad():
        compiled(x, target)  # the capture
        out = compiled(x, target)  # the replay
    (entry,) = [e for es in compiled._cache.values() for e in es]
    return out, entry.region.fast


@pytest.mark.parametrize(("dtype", "rtol"), [("float64", 1e-13), ("float32", 1e-6)])
def test_no_grad_loss_is_one_kernel(dtype, rtol):
    x, target = _data(dtype)
    ours = (ember.tensor(x), ember.tensor(target))
    out, program = _compiled_no_grad(*ours)
    kernels = _kernels(program)
    assert len(kernels) == 1 and "y[g" in kernels[0].source, [k.source for k in kernels]
    np.testing.assert_allclose(out.item(), _loss(ember, *ours).item(), rtol=rtol)
    theirs = _loss(torch, torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(out.item(), theirs.item(), rtol=10 * rtol)


def test_large_rows_run_in_threads():
    x, target = _data("float64", rows=4096, classes=50, ignored=range(0, 4096, 7))
    ours = (ember.tensor(x), ember.tensor(target))
    out, program = _compiled_no_grad(*ours)
    assert "omp parallel" in _kernels(program)[0].source
    theirs = _loss(torch, torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(out.item(), theirs.item(), rtol=1e-12)


def test_training_forward_is_one_kernel():
    losses, joint = _trajectories(ember.float64, steps=5)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-12)
    np.testing.assert_allclose(losses[0], losses[2], rtol=1e-10)
    ops = [v.name for k, v in joint.forward.__globals__.items() if k.startswith("OP")]
    assert not {"gather", "where", "ne", "sum", "div", "_to_copy"} & set(ops), ops
    assert any("y[g" in k.source for k in _kernels(joint.forward))


VARIANTS = {
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "weight": {"weight": np.linspace(0.5, 2.0, 13)},
    "smoothing": {"label_smoothing": 0.1},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_other_forms_give_torchs_values(variant):
    """Other reductions, class weights, label smoothing: what fits fuses, values as PyTorch's."""
    x, target = _data("float64")
    options = VARIANTS[variant]

    def call(lib, a, t):
        kw = dict(options)
        if "weight" in kw:
            kw["weight"] = lib.tensor(kw["weight"])
        return lib.nn.functional.cross_entropy(a * 2.0, t, **kw)

    compiled = ember.compile(lambda a, t: call(ember, a, t))
    ours = (ember.tensor(x), ember.tensor(target))
    with ember.no_grad():
        compiled(*ours)
        out = compiled(*ours)
    theirs = call(torch, torch.tensor(x), torch.tensor(target))
    np.testing.assert_allclose(out.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), call(ember, *ours).numpy(), rtol=1e-13, atol=1e-15)
