"""Fused kernels on every device: the xpu (OpenCL) and CUDA/ROCm generators
(ember_backend_gpu/fused, backend_intel's fused.py) as well as the CPU's.

Run with ``EMBER_TEST_DEVICES=xpu`` (PoCL) and ``EMBER_CUDA_EMULATOR=1 EMBER_TEST_DEVICES=cuda``
(the CUDA emulator runs the generated CUDA C++ on the CPU). A compiled function's replay runs
each chain as one generated kernel ("FUSED" in its program, and the kernel the backend returned
holds its source); float64 results equal eager ember's and PyTorch's. Compiled SGD/Adam/AdamW
steps are one multi-tensor kernel per bucket (traced from compiler/optim_rules.py where the
device has no fused op kernel), and their 20-step float64 trajectories equal eager ember's and
PyTorch's.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import fusion, logs
from ember.dispatcher.devices import REGISTRY

from .test_fusion import _replayed  # (result, replay source) of a compiled function's 2nd call


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _f(lib):
    return lib.nn.functional


CHAINS = {  # fn(lib, x, w, b, r, keep): the chain's ops as the fusion log names them
    "bias_gelu": (lambda lib, x, w, b, r, keep: _f(lib).gelu(x * w + b), "mul, add, gelu"),
    "residual_add": (
        lambda lib, x, w, b, r, keep: lib.tanh(x + b) * 0.5 + r,
        "add, tanh, mul, add",
    ),
    "softmax": (
        lambda lib, x, w, b, r, keep: _f(lib).softmax(x * 0.125 + r, -1),
        "mul, add, softmax",
    ),
    "masked_softmax": (  # an attention mask: -inf where not kept
        lambda lib, x, w, b, r, keep: _f(lib).softmax(lib.where(keep, x, float("-inf")), -1),
        "where, softmax",
    ),
    "layer_norm": (
        lambda lib, x, w, b, r, keep: _f(lib).layer_norm(x + r, (x.shape[-1],), w, b[0], 1e-5),
        "add, layer_norm",
    ),
    "dropout_mask": (  # dropout's mask applied and rescaled, the residual added
        lambda lib, x, w, b, r, keep: lib.where(keep, x / 0.75, 0.0) + r,
        "div, where, add",
    ),
    "log_softmax_sum": (
        lambda lib, x, w, b, r, keep: _f(lib).log_softmax(x - b, -1),
        "sub, log_softmax",
    ),
    "mean": (lambda lib, x, w, b, r, keep: lib.sigmoid(x * w).mean(-1), "mul, sigmoid, mean"),
}


# Chains a device's generator declines (the chain then runs op by op), with the reason: data,
# checked to stay declined, so a fix shows up here
DECLINED: dict = {}


def _generates(device) -> bool:
    """Whether the device's plugin has the ``ember_fused_kernel`` hook (cpu, xpu, cuda, rocm);
    a device without it (the test suite's ``ref`` backend) replays every chain op by op."""
    record = getattr(REGISTRY.backend(device), "record", None)
    return record is not None and hasattr(record.obj, "ember_fused_kernel")


def _declined(device, name) -> bool:
    return (device, name) in DECLINED or not _generates(device)


def _inputs(seed=0, shape=(3, 5, 40)):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in (shape, shape[-1:], (1, shape[-1]), shape)]
    keep = rng.random(shape) > 0.25
    keep[..., 0] = True  # every row keeps one score (a fully masked softmax row is NaN)
    return arrays, keep


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chain_fused_equals_eager_and_torch(name, device, capsys):
    fn, ops = CHAINS[name]
    arrays, keep = _inputs()
    ours = [ember.tensor(a, device=device) for a in arrays] + [ember.tensor(keep, device=device)]
    logs.set_logs(fusion=True)
    try:
        out, source = _replayed(lambda *a: fn(ember, *a), ours)
    finally:
        logs.set_logs(fusion=False)
    if _declined(device, name):
        assert "FUSED" not in source, DECLINED.get((device, name), "no ember_fused_kernel hook")
    else:
        assert source.count("FUSED") == 1, source  # the chain is one kernel
        assert f"fused: {ops} (" in capsys.readouterr().err
    eager = fn(ember, *ours)
    theirs = fn(torch, *[torch.tensor(a) for a in arrays], torch.tensor(keep))
    np.testing.assert_allclose(out.cpu().numpy(), eager.cpu().numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(out.cpu().numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


LONG = ["softmax", "masked_softmax", "layer_norm", "log_softmax_sum", "mean"]


@pytest.mark.parametrize("name", LONG)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_long_rows_take_a_work_group_each(name, dtype, device):
    """Rows of 300 (the GPU generators give each a work-group and fold its statistics by a
    tree in shared memory) and an odd row count."""
    fn, _ops = CHAINS[name]
    arrays, keep = _inputs(seed=5, shape=(3, 7, 300))
    arrays = [a.astype(dtype) for a in arrays]
    ours = [ember.tensor(a, device=device) for a in arrays] + [ember.tensor(keep, device=device)]
    out, source = _replayed(lambda *a: fn(ember, *a), ours)
    assert source.count("FUSED") == (0 if _declined(device, name) else 1)
    theirs = fn(torch, *[torch.tensor(a) for a in arrays], torch.tensor(keep))
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(out.cpu().numpy(), theirs.numpy(), rtol=tol, atol=tol)


def test_float32_chain_and_broadcast_strides(device):
    """A float32 chain whose operands broadcast along several dims (a column, a row, a scalar
    tensor) and a transposed input."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 7)).astype(np.float32)
    col, row = rng.standard_normal((6, 1)).astype(np.float32), rng.standard_normal(7)
    row = row.astype(np.float32)
    args = [ember.tensor(np.ascontiguousarray(x.T), device=device).t()]
    args += [ember.tensor(col, device=device), ember.tensor(row, device=device)]

    def fn(a, c, r):
        return ember.maximum(a * c, r).pow(2.0) - ember.sqrt(a * a + 1) * ember.exp(-c)

    out, source = _replayed(fn, args)
    assert ("FUSED" in source) == _generates(device) and out.dtype == ember.float32
    np.testing.assert_allclose(out.cpu().numpy(), fn(*args).cpu().numpy(), rtol=2e-6, atol=2e-6)


def test_the_backend_generated_the_kernel(device):
    """The hook of the device's plugin returned a kernel whose source is its own generator's
    (OpenCL C on xpu, CUDA C++ on cuda, C on the CPU): the fused path ran, not a replay."""
    arrays, _keep = _inputs(seed=1)
    ours = [ember.tensor(a, device=device) for a in arrays]
    fn = CHAINS["bias_gelu"][0]
    compiled = ember.compile(lambda x, w, b, r: fn(ember, x, w, b, r, None))
    with ember.no_grad():
        compiled(*ours)
        compiled(*ours)
    chains, _ = fusion.plan(*_graph(compiled))
    description = fusion.describe(chains[0])
    kernel, why = fusion.kernel_for(description)
    if not _generates(device):
        assert kernel is None and "ember_fused_kernel" in why, why
        return
    assert kernel is not None, why
    marker = {"cpu": "ember_fused(intptr_t", "xpu": "kernel void em_fused(",
              "cuda": "EM_KERNEL em_fused("}[device]  # fmt: skip
    assert marker in kernel.source


def _graph(compiled):
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    graph = entry.region.graph
    return list(graph.block().nodes()), list(graph.outputs())


SHAPES = [(3,), (181, 130), (5, 4), (1,), (97, 101)]
OPTIMIZERS = [
    ("SGD", {}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"momentum": 0.9, "dampening": 0.2, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1, "maximize": True}),
    ("AdamW", {}),
    ("AdamW", {"amsgrad": True, "weight_decay": 0.05}),
]


def _trajectory(lib, name, kw, device=None, *, compiled=False, steps=20):
    rng = np.random.default_rng(7)
    where = {} if device is None else {"device": device}
    params = [lib.tensor(rng.standard_normal(s), dtype=lib.float64, **where).requires_grad_()
              for s in SHAPES]  # fmt: skip
    opt = getattr(lib.optim, name)(params, lr=0.01, **kw)
    if compiled:
        opt.step = lib.compile(opt.step)
    for _ in range(steps):
        for p, s in zip(params, SHAPES):
            p.grad = lib.tensor(rng.standard_normal(s), dtype=lib.float64, **where)
        opt.step()
    return [p.detach().cpu().numpy() for p in params], opt


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[f"{n}-{k}" for n, k in OPTIMIZERS])
def test_optimizer_step_is_one_kernel_and_matches(name, kw, device):
    got, opt = _trajectory(ember, name, kw, device, compiled=True)
    (bucket,) = opt.step._plan.buckets
    if not _generates(device):
        assert bucket.multi is None, bucket.describe()
    elif device != "cpu":  # the CPU runs the fused op's own C kernel instead
        assert bucket.multi is not None, bucket.describe()
        assert bucket.multi.description.segments == tuple(int(np.prod(s)) for s in SHAPES)
        assert "multi-tensor" in bucket.describe()
    eager, _ = _trajectory(ember, name, kw, device)
    want, _ = _trajectory(torch, name, kw)
    for g, e, w in zip(got, eager, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_many_tensors_take_several_launches_on_opencl(device):
    """40 parameters: more than one OpenCL launch holds (its slots), one CUDA launch; the
    trajectory is eager's either way."""
    shapes = [(k % 7 + 1, 3) for k in range(40)]

    def run(compiled):
        rng = np.random.default_rng(11)
        params = [ember.tensor(rng.standard_normal(s), device=device).requires_grad_()
                  for s in shapes]  # fmt: skip
        opt = ember.optim.Adam(params, lr=0.01, amsgrad=True)
        if compiled:
            opt.step = ember.compile(opt.step)
        for _ in range(5):
            for p, s in zip(params, shapes):
                p.grad = ember.tensor(rng.standard_normal(s), device=device)
            opt.step()
        return [p.detach().cpu().numpy() for p in params], opt

    got, opt = run(True)
    if device == "xpu":
        source = opt.step._plan.buckets[0].multi.kernel.source
        assert "case 1:" in source and "case 39:" not in source  # slots < tensors
    for g, e in zip(got, run(False)[0]):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
