"""Compiled optimizer steps (compiler/optim_step.py): ``opt.step = ember.compile(opt.step)``
follows eager ember's and PyTorch's parameter trajectories over 20 steps, rebuilds its plan only
where PyTorch recompiles, and says in ``EMBER_LOGS=fusion`` where it replays op by op."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.compiler import logs
from ember.compiler.optim_step import CompiledStep
from ember.jit.ops import resolve

from .test_fusion_devices import _generates

CASES = [
    ("SGD", {}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("SGD", {"momentum": 0.9, "dampening": 0.1, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"amsgrad": True}),
    ("AdamW", {"maximize": True, "betas": (0.8, 0.99)}),
]


def _train(lib, name, kw, device, *, compiled=False, lr=0.05, schedule=False, steps=20, hook=None):
    """The parameters after ``steps`` steps of a small tanh model (float64). ``hook(i, opt)``
    runs after step ``i`` and returns the optimizer to go on with."""
    rng = np.random.default_rng(0)
    init = [rng.standard_normal((5, 4)), rng.standard_normal(4), rng.standard_normal(4)]
    params = [lib.tensor(w, dtype=lib.float64, device=device).requires_grad_() for w in init]
    opt = getattr(lib.optim, name)(params, lr=lr, **kw)
    sched = lib.optim.lr_scheduler.StepLR(opt, 3, gamma=0.5) if schedule else None
    if compiled:
        opt.step = lib.compile(opt.step)
    for i in range(steps):
        x = lib.tensor(rng.standard_normal((3, 5)), dtype=lib.float64, device=device)
        opt.zero_grad()
        ((x @ params[0] + params[1]).tanh() * params[2]).pow(2).sum().backward()
        opt.step()
        if sched is not None:
            sched.step()
        if hook is not None:
            opt = hook(i, opt)
    return [p.detach().cpu().numpy() for p in params], opt


@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{sorted(k)}" for n, k in CASES])
@pytest.mark.parametrize("schedule", [False, True], ids=["const", "steplr"])
def test_trajectory_matches_eager_and_torch(name, kw, schedule, device):
    got, opt = _train(ember, name, kw, device, compiled=True, schedule=schedule)
    assert isinstance(opt.step, CompiledStep)
    eager, _ = _train(ember, name, kw, device, schedule=schedule)
    want, _ = _train(torch, name, kw, "cpu", schedule=schedule)
    for g, e, w in zip(got, eager, want):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float", "tensor"])
def test_lr_changes_recompile_as_torch(tensor_lr, device):
    """PyTorch 2.13 (specialize_float=False): a float LR changed by a scheduler recompiles once,
    then is a dynamic float; a tensor LR never recompiles."""
    lr = ember.tensor(0.05, dtype=ember.float64) if tensor_lr else 0.05
    _, opt = _train(ember, "Adam", {}, device, compiled=True, lr=lr, schedule=True)
    assert opt.step.recompiles == (0 if tensor_lr else 1)


def test_tensor_lr_matches_eager(device):
    lr = ember.tensor(0.05, dtype=ember.float64)
    got, _ = _train(ember, "AdamW", {}, device, compiled=True, lr=lr, schedule=True)
    want, _ = _train(ember, "AdamW", {}, device, lr=ember.tensor(0.05, dtype=ember.float64),
                     schedule=True)  # fmt: skip
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def _logged(monkeypatch, run) -> str:
    lines = []
    monkeypatch.setattr(logs, "log", lambda artifact, text: lines.append((artifact, text)))
    monkeypatch.setattr(logs, "enabled", lambda artifact: True)
    run()
    return "\n".join(f"{a}: {t}" for a, t in lines)


def test_fusion_log_says_which_kernel(monkeypatch, device):
    """The fused op's kernel where the backend has one (the CPU); elsewhere the update traced
    as one generated multi-tensor kernel (xpu, CUDA: compiler/optim_rules.FUSED_OP_RULES), or
    op by op where the plugin generates no kernels."""
    text = _logged(monkeypatch, lambda: _train(ember, "Adam", {}, device, compiled=True, steps=2))
    if resolve("ember::_fused_adam_").kernel(device, ember.float64) is not None:
        assert f"_fused_adam_ on {device} ember.float64, 3 tensors: one fused kernel" in text
    elif not _generates(device):  # a plugin without the hook (the suite's ref backend)
        assert f"backend '{device}' has no ember_fused_kernel hook; runs op by op" in text
    else:
        assert (
            f"Adam update on {device} ember.float64, 3 tensors: 1 fused kernel(s), multi-tensor"
            in text
        )


def test_hyperparameter_change_and_state_load_rebuild(device):
    _, opt = _train(ember, "SGD", {"momentum": 0.9}, device, compiled=True, steps=3)
    step = opt.step
    opt.param_groups[0]["momentum"] = 0.5
    p = opt.param_groups[0]["params"][0]
    p.grad = ember.ones_like(p)
    step()
    assert step.recompiles == 1
    opt.load_state_dict(opt.state_dict())
    for q in opt.param_groups[0]["params"]:
        q.grad = ember.ones_like(q)
    step()
    assert step.recompiles == 2


def test_hooks_and_unsupported_optimizer(device):
    calls = []
    p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    opt = ember.optim.Adafactor([p], lr=0.1)
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    opt.step = ember.compile(opt.step)
    twin = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    ref = ember.optim.Adafactor([twin], lr=0.1)
    for _ in range(3):
        for q, o in ((p, opt), (twin, ref)):
            q.grad = ember.full((3,), 0.5, dtype=ember.float64, device=device)
            o.step()
    assert calls == ["post"] * 3
    np.testing.assert_array_equal(p.detach().cpu().numpy(), twin.detach().cpu().numpy())


@pytest.mark.parametrize("name,kw", CASES[1::2], ids=[n for n, _ in CASES[1::2]])
def test_compiled_function_calling_step(name, kw, device):
    """PyTorch's tutorial form: ``@compile def fn(): opt.step()`` replays the compiled step."""
    rng = np.random.default_rng(1)
    init = rng.standard_normal((4, 3))
    runs = []
    for compiled in (True, False):
        p = ember.tensor(init, dtype=ember.float64, device=device).requires_grad_()
        opt = getattr(ember.optim, name)([p], lr=0.05, **kw)

        def fn(opt=opt):
            opt.step()

        run = ember.compile(fn, fullgraph=True) if compiled else fn
        grads = np.random.default_rng(2)
        for _ in range(20):
            p.grad = ember.tensor(grads.standard_normal((4, 3)), dtype=ember.float64,
                                  device=device)  # fmt: skip
            run()
        runs.append(p.detach().cpu().numpy())
        if compiled:
            (entry,) = [e for es in run._cache.values() for e in es]
            assert entry.region is not None and entry.region.steps == [
                ember.compiler.optim_step.step_of(opt)
            ]
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-12, atol=1e-12)


def test_step_with_other_ops_is_a_break(device):
    p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)

    @ember.compile
    def fn(x):
        y = x * 2
        opt.step()
        return y

    for _ in range(2):
        p.grad = ember.ones_like(p)
        fn(ember.ones(2, device=device))
    np.testing.assert_allclose(p.detach().cpu().numpy(), 0.8)
    (entry,) = [e for es in fn._cache.values() for e in es]
    assert entry.region is None and "Optimizer.step" in str(entry.reasons[0])


def test_groups_of_two_dtypes_and_an_added_group(device):
    """One fused call per (device, dtype) bucket; add_param_group rebuilds the plan."""
    made = [ember.full((3,), 1.0, dtype=dt, device=device) for dt in (ember.float32, ember.float64)]
    twins = [t.clone() for t in made]
    runs = []
    for params in (made, twins):
        for p in params:
            p.requires_grad_()
        runs.append(ember.optim.Adam(params, lr=0.1))
    compiled = runs[0]
    compiled.step = ember.compile(compiled.step)
    for i in range(4):
        if i == 2:
            for opt in runs:
                extra = ember.ones(2, dtype=ember.float64, device=device, requires_grad=True)
                opt.add_param_group({"params": [extra], "lr": 0.2})
        for opt in runs:
            for group in opt.param_groups:
                for p in group["params"]:
                    p.grad = ember.full(p.shape, 0.5 + i, dtype=p.dtype, device=device)
            opt.step()
    assert len(compiled.step._plan.buckets) == 3 and compiled.step.recompiles == 1
    for got, want in zip(made + [runs[0].param_groups[1]["params"][0]],
                         twins + [runs[1].param_groups[1]["params"][0]]):  # fmt: skip
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-6, atol=1e-7)


def _np(t):
    return t.detach().cpu().numpy()


def test_compiled_step_called_from_a_compiled_function(device):
    """``opt.step = ember.compile(opt.step)`` then ``@compile def fn(): opt.step()``: the
    capture keeps the compiled step (nothing of it traced), and replays it."""
    p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    twin = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    opt, ref = ember.optim.Adam([p], lr=0.1), ember.optim.Adam([twin], lr=0.1)
    opt.step = ember.compile(opt.step)
    fn = ember.compile(lambda: opt.step(), fullgraph=True)
    for i in range(5):
        for q, run in ((p, fn), (twin, ref.step)):
            q.grad = ember.full((3,), 0.5 * i - 1, dtype=ember.float64, device=device)
            run()
    (entry,) = [e for es in fn._cache.values() for e in es]
    assert entry.region.steps == [opt.step]
    np.testing.assert_allclose(_np(p), _np(twin), rtol=1e-12, atol=1e-12)


def test_explain_counts_the_step_as_a_break():
    p = ember.ones(3, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)

    def fn(x):
        y = x.sin()
        opt.step()
        return y.cos()

    p.grad = ember.ones(3)
    out = ember._dynamo.explain(fn)(ember.ones(2))
    assert out.graph_break_count == 1 and "Optimizer.step" in str(out.break_reasons[0])


def test_float_hyperparameters_become_dynamic(device):
    """A float hyperparameter changed at every step (weight decay, betas): PyTorch 2.13
    recompiles once, then reads it as a dynamic float (2 graphs over 6 steps); so does ember."""
    for name, key, value in (("SGD", "weight_decay", lambda i: 0.01 * i),
                             ("Adam", "betas", lambda i: (0.9 - 0.01 * i, 0.999))):  # fmt: skip
        p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
        twin = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
        opt = getattr(ember.optim, name)([p], lr=0.1)
        ref = getattr(ember.optim, name)([twin], lr=0.1)
        opt.step = ember.compile(opt.step)
        for i in range(6):
            for q, o in ((p, opt), (twin, ref)):
                o.param_groups[0][key] = value(i + 1)
                q.grad = ember.full((3,), 0.5 - 0.2 * i, dtype=ember.float64, device=device)
                o.step()
        assert opt.step.recompiles == 1
        np.testing.assert_allclose(_np(p), _np(twin), rtol=1e-12, atol=1e-12)


def test_recompile_limit_falls_back_to_eager(device, caplog):
    """New parameters at every step (a group added each time): a rebuild each, up to
    recompile_limit (8), then PyTorch's warning and eager steps."""
    params = [ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)]
    twins = [ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)]
    opt, ref = ember.optim.SGD(params, lr=0.1), ember.optim.SGD(twins, lr=0.1)
    opt.step = ember.compile(opt.step)
    for _ in range(12):
        for group, o in ((params, opt), (twins, ref)):
            extra = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
            group.append(extra)
            o.add_param_group({"params": [extra]})
            for q in group:
                q.grad = ember.full((3,), 0.5, dtype=ember.float64, device=device)
            o.step()
    assert opt.step.recompiles == 8 and "recompile_limit (8)" in caplog.text
    for got, want in zip(params, twins):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12)


def test_alternating_flags_reuse_their_plans(device):
    """PyTorch keeps a cache entry per guard set: flipping a flag back and forth compiles two
    plans, not one per flip (Adam's step counters stay shared between them)."""
    p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    twin = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    opt, ref = ember.optim.Adam([p], lr=0.1), ember.optim.Adam([twin], lr=0.1)
    opt.step = ember.compile(opt.step)
    for i in range(8):
        for q, o in ((p, opt), (twin, ref)):
            o.param_groups[0]["maximize"] = bool(i % 2)
            q.grad = ember.full((3,), 0.3 + i, dtype=ember.float64, device=device)
            o.step()
    assert opt.step.recompiles == 1 and len(opt.step._plans) == 2
    np.testing.assert_allclose(_np(p), _np(twin), rtol=1e-12, atol=1e-12)


def test_grad_scaler_attributes_and_state_dict(device):
    """``grad_scale``/``found_inf`` (as GradScaler hands them to fused optimizers) are read per
    call: found_inf skips the update and keeps the step counters; the compiled step's state
    dict continues in an eager optimizer on the same trajectory."""
    p = ember.ones(3, dtype=ember.float64, device=device, requires_grad=True)
    opt = ember.optim.Adam([p], lr=0.1)
    opt.step = ember.compile(opt.step)
    for i in range(3):
        p.grad = ember.full((3,), 0.5 + i, dtype=ember.float64, device=device)
        opt.step()
    twin = p.detach().clone().requires_grad_()
    ref = ember.optim.Adam([twin], lr=0.1)
    ref.load_state_dict(opt.state_dict())
    opt.grad_scale = ember.tensor([2.0], device=device)
    opt.found_inf = ember.tensor([1.0], device=device)
    before = _np(p).copy()
    p.grad = ember.ones(3, dtype=ember.float64, device=device)
    opt.step()
    np.testing.assert_array_equal(_np(p), before)
    assert opt.state[p]["step"].item() == 3
    opt.found_inf = ember.tensor([0.0], device=device)
    for i in range(3):
        for q, o, scale in ((p, opt, 2.0), (twin, ref, 1.0)):
            q.grad = ember.full((3,), (1.5 - i) * scale, dtype=ember.float64, device=device)
            o.step()
    np.testing.assert_allclose(_np(p), _np(twin), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,kw", [("SGD", {"momentum": 0.9}), ("Adam", {"amsgrad": True})])
def test_kernel_called_directly_and_strided_gradients_through_the_op(name, kw):
    """On the CPU a bucket calls the fused kernel itself (``direct``); a transposed gradient
    goes through the op's runner (a contiguous copy), with eager's results either way."""
    runs = []
    for compiled in (True, False):
        ember.manual_seed(0)
        w = ember.randn(4, 4, dtype=ember.float64).requires_grad_()
        opt = getattr(ember.optim, name)([w], lr=0.05, **kw)
        if compiled:
            opt.step = ember.compile(opt.step)
        for i in range(6):
            g = ember.randn(4, 4, dtype=ember.float64)
            w.grad = g.t() if i % 2 else g
            opt.step()
        if compiled:
            assert opt.step._plan.buckets[0].direct is not None
        runs.append(w.detach().numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
