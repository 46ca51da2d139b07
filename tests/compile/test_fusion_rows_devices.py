"""Row statistics in the middle of a fused chain (feature ``row_steps``) on every device: the
xpu (OpenCL) and CUDA/ROCm generators (ember_backend_gpu/fused/rows.py) as well as the CPU's.

Run with ``EMBER_TEST_DEVICES=cpu,xpu`` (PoCL) and ``EMBER_CUDA_EMULATOR=1
EMBER_TEST_DEVICES=cuda``. The chains of test_fusion_mid.py (softmax and layer-norm backward
formulas, a layer norm and a softmax by hand, a row sum read by addcmul...) are one kernel on
the device: the fusion log names the feature and no re-plan, the kernel the plugin returned
holds its generator's source, and the values equal eager ember's and PyTorch's, for rows of 37
(a work-item each on a GPU) and of 300 (a work-group each, the statistics folded across it).
A compiled model's backward program holds such kernels and its 10-step trajectory follows
eager ember's and PyTorch's.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import ember
from ember.compiler import fusion, logs

from .test_fusion_devices import _generates
from .test_fusion_mid import CHAINS, _forward, _model, _Net

MARKER = {"cpu": "ember_fused(intptr_t", "xpu": "kernel void em_fused(",
          "cuda": "EM_KERNEL em_fused("}  # fmt: skip
# a statistic accumulated mid-chain: C's, OpenCL's (EM_ACC: double where the device has it)
# and CUDA's accumulator declarations
ACCUMULATOR = re.compile(r"(double|EM_ACC|float) a\d+ = ")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("EMBER_CPU_CACHE", str(tmp_path_factory.getbasetemp() / "fused-cache"))


def _run(fn, tensors):
    """The compiled function's replayed result and its replay program (``source``, and the
    fused kernels among its globals)."""
    compiled = ember.compile(lambda *a: fn(ember, *a))
    with ember.no_grad():
        compiled(*tensors)
        out = compiled(*tensors)
    (entry,) = [e for entries in compiled._cache.values() for e in entries]
    return out, entry.region.fast


@pytest.mark.parametrize("length", [37, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_row_steps_are_one_kernel_on_the_device(name, dtype, length, device, capsys):
    fn, ops = CHAINS[name]
    rng = np.random.default_rng(length)
    shape = (3, 5, length)
    arrays = [rng.standard_normal(s).astype(dtype) for s in (shape, shape, shape[-1:])]
    ours = [ember.tensor(a, device=device) for a in arrays]
    logs.set_logs(fusion=True)
    try:
        out, fast = _run(fn, ours)
    finally:
        logs.set_logs(fusion=False)
    err = capsys.readouterr().err
    if not _generates(device):  # the ref backend: op by op
        assert "FUSED" not in fast.source
        return
    assert fast.source.count("FUSED") == 1, fast.source  # the whole chain, one kernel
    assert f"fused: {ops} (" in err and "row_steps)" in err, err
    assert "declined with features" not in err, err  # the generator took the feature
    kernels = [v for k, v in fast.__globals__.items() if k.startswith("FUSED")]
    (kernel,) = {id(k): k for k in kernels}.values()
    assert MARKER[device] in kernel.source and ACCUMULATOR.search(kernel.source), kernel.source
    if device != "cpu" and length >= 64:  # a work-group per row, its statistics folded
        assert "em_red[lid]" in kernel.source
    eager = fn(ember, *ours)
    want = fn(torch, *[torch.tensor(a) for a in arrays])
    assert tuple(out.shape) == tuple(want.shape) and out.dtype == eager.dtype
    tol = 1e-12 if dtype == np.float64 else 3e-5
    np.testing.assert_allclose(out.cpu().numpy(), eager.cpu().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(out.cpu().numpy(), want.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("length", [9, 300])
def test_statistics_keep_nan_and_inf(length, device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, length))
    x[1, 3], x[2, 0], x[3, length - 1] = np.nan, np.inf, -np.inf
    g, w = np.ones((4, length)), np.ones(length)
    for name in ("softmax_by_hand", "scaled_by_row_sum", "ends_in_a_sum"):
        fn = CHAINS[name][0]
        out, fast = _run(fn, [ember.tensor(a, device=device) for a in (x, g, w)])
        assert fast.source.count("FUSED") == _generates(device), name
        want = fn(torch, *[torch.tensor(a) for a in (x, g, w)]).numpy()
        got = out.cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True, err_msg=name)


def test_training_trajectory_on_the_device(device):
    """10 SGD steps in float64 of a model whose backward formulas are chains with row sums in
    the middle: compiled ember on the device, eager ember and PyTorch agree, and the backward
    program holds a row-steps kernel of the device's generator."""
    ember.manual_seed(0)
    compiled_net, eager_net = _Net().double().to(device), _Net().double().to(device)
    eager_net.load_state_dict(compiled_net.state_dict())
    twin = _model(torch).double()
    with torch.no_grad():
        for name, p in twin.named_parameters():
            p.copy_(torch.tensor(compiled_net.parts.get_parameter(name).detach().cpu().numpy()))
    compiled = ember.compile(compiled_net)
    rng = np.random.default_rng(7)
    x, target = rng.standard_normal((5, 3, 24)), rng.standard_normal((5, 3, 7))
    runs = [
        (compiled, compiled_net.parameters(), {"device": device}, ember),
        (eager_net, eager_net.parameters(), {"device": device}, ember),
        (lambda v: _forward(torch, twin, v), twin.parameters(), {}, torch),
    ]
    runs = [(run, lib.optim.SGD(params, lr=0.1), where, lib) for run, params, where, lib in runs]
    losses = [[], [], []]
    for _ in range(10):
        for k, (run, opt, where, lib) in enumerate(runs):
            opt.zero_grad()
            out = run(lib.tensor(x, **where))
            loss = (out * lib.tensor(target, **where)).square().mean()
            loss.backward()
            opt.step()
            losses[k].append(loss.item())
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)
    np.testing.assert_allclose(losses[0], losses[2], rtol=1e-10)
    for name, p in twin.named_parameters():
        got = compiled_net.parts.get_parameter(name).detach().cpu().numpy()
        np.testing.assert_allclose(got, p.detach().numpy(), rtol=1e-9, atol=1e-12)
    if not _generates(device):
        return
    (entry,) = [e for es in compiled._compiled._cache.values() for e in es if e.region]
    program = entry.region.joint.backward
    kernels = [v for k, v in program.__globals__.items() if k.startswith("FUSED")]
    rows = [k.source for k in kernels if ACCUMULATOR.search(k.source)]
    assert rows and all(MARKER[device] in s for s in rows), [k.source for k in kernels]


def test_the_plan_keeps_the_feature(device):
    """The description a device's generator receives lists ``row_steps`` and its kernel is
    not None (declined, the scheduler would plan the graph again without the feature)."""
    fn = CHAINS["softmax_backward"][0]
    arrays = [np.random.default_rng(4).standard_normal(s) for s in ((2, 3, 80),) * 2 + ((80,),)]
    tensors = [ember.tensor(a, device=device) for a in arrays]
    graph = ember._dynamo.explain(lambda *a: fn(ember, *a))(*tensors).graphs[0]
    (chain,) = fusion.plan(list(graph.block().nodes()), graph.outputs())[0]
    description = fusion.describe(chain)
    assert description.features == (fusion.ROW_STEPS,) and description.device_type == device
    kernel, why = fusion.kernel_for(description)
    assert (kernel is not None) == _generates(device), why
