"""GradScaler against PyTorch's: the same training sequences with injected inf/NaN gradients give
the same scales, growth trackers, skipped steps and parameters; clipping between unscale_ and
step; several optimizers; state_dict; disabled pass-through; errors."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ember
from ember.dispatcher import layers
from ember.dispatcher.layers import Layer

torch = pytest.importorskip("torch")

W0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32)
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.25, -2.0]], np.float32)


def _model(lib, device):
    w = lib.nn.Parameter(lib.tensor(W0).to(device))
    b = lib.nn.Parameter(lib.zeros(3).to(device))
    return w, b


def _loss(lib, w, b, device):
    x = lib.tensor(X).to(device)
    return ((x @ w + b) ** 2).mean()


def _run(lib, scenario, device="cpu"):
    """Per step: (scale, growth tracker, whether the step ran, parameters)."""
    w, b = _model(lib, device)
    opt = lib.optim.SGD([w, b], lr=0.05, momentum=0.9)
    kind = "cuda" if device == "cuda" else device.split(":")[0]
    scaler = lib.amp.GradScaler(kind, **scenario.get("scaler", {}))
    history = []
    for step in range(scenario.get("steps", 10)):
        opt.zero_grad()
        scaler.scale(_loss(lib, w, b, device)).backward()
        bad = scenario.get("bad", {}).get(step)
        if bad is not None:
            with lib.no_grad():
                (w if step % 2 else b).grad.view(-1)[1] = bad
        if scenario.get("clip"):
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_([w, b], scenario["clip"])
        ran = scaler.step(opt) is None and opt.state[w].get("momentum_buffer") is not None
        before = w.detach().cpu().numpy().copy()
        scaler.update()
        history.append(
            (scaler.get_scale(), scaler._get_growth_tracker(), ran, before.round(5).tolist(),
             b.detach().cpu().numpy().round(5).tolist())
        )  # fmt: skip
    return history, scaler.state_dict()


SCENARIOS = {
    "clean": {"scaler": {"init_scale": 4.0, "growth_interval": 3}},
    "inf_and_nan": {
        "scaler": {"init_scale": 2.0**10, "growth_interval": 2},
        "bad": {1: float("inf"), 4: float("nan"), 5: float("-inf")},
    },
    "backoff_below_one": {
        "scaler": {"init_scale": 2.0, "backoff_factor": 0.25, "growth_interval": 100},
        "bad": {0: float("inf"), 1: float("inf"), 2: float("inf")},
    },
    "clipped": {"scaler": {"init_scale": 512.0, "growth_interval": 4}, "clip": 0.5,
                "bad": {2: float("inf")}},
    "growth_factor": {"scaler": {"init_scale": 3.0, "growth_factor": 1.5, "growth_interval": 1}},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenarios_match_pytorch(name):
    scenario = SCENARIOS[name]
    got, got_state = _run(ember, scenario)
    want, want_state = _run(torch, scenario)
    for step, (g, t) in enumerate(zip(got, want)):
        assert g[:3] == t[:3], f"{name}, step {step}: (scale, tracker, ran) {g[:3]}, torch {t[:3]}"
        # parameters to float32 rounding: the optimizer and clipping round their own way
        np.testing.assert_allclose(g[3], t[3], rtol=1e-4, atol=1e-6, err_msg=f"{name} {step}")
        np.testing.assert_allclose(g[4], t[4], rtol=1e-4, atol=1e-6, err_msg=f"{name} {step}")
    assert got_state == want_state


def test_scenario_on_xpu_matches_cpu():
    from ..conftest import unavailable_reason

    if unavailable_reason("xpu"):
        pytest.skip(unavailable_reason("xpu"))
    scenario = SCENARIOS["inf_and_nan"]
    got, _ = _run(ember, scenario, "xpu")
    want, _ = _run(ember, scenario, "cpu")
    assert [g[:3] for g in got] == [w[:3] for w in want]


def test_scenario_on_emulated_cuda_matches_cpu(emulated_cuda):
    scenario = SCENARIOS["inf_and_nan"]
    got, _ = _run(ember, scenario, "cuda")
    want, _ = _run(ember, scenario, "cpu")
    assert [g[:3] for g in got] == [w[:3] for w in want]


class Calls(Layer):
    name = "calls"
    priority = 250

    def __init__(self):
        self.calls: list = []

    def wants(self, op, args) -> bool:
        return op.name == "_amp_foreach_non_finite_check_and_unscale_"

    def handle(self, op, args):
        self.calls.append([t.dtype for t in args[0]])
        return op.redispatch(self, args)


def test_one_fused_unscale_per_dtype():
    dtypes = (ember.float32, ember.bfloat16, ember.float32, ember.bfloat16, ember.float64)
    params = [ember.nn.Parameter(ember.ones(3, dtype=d)) for d in dtypes]
    opt = ember.optim.SGD(params, lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    scaler.scale(sum(p.float().sum() for p in params)).backward()
    with layers.installed(Calls()) as calls:
        scaler.unscale_(opt)
    assert all(len(set(call)) == 1 for call in calls.calls)  # one dtype per call
    assert sorted((len(c), c[0].name) for c in calls.calls) == [
        (1, "float64"),
        (2, "bfloat16"),
        (2, "float32"),
    ]
    for p in params:
        assert p.grad.float().tolist() == [1.0, 1.0, 1.0]


def test_multiple_optimizers_and_explicit_scale():
    def run(lib):
        w1 = lib.nn.Parameter(lib.ones(2))
        w2 = lib.nn.Parameter(lib.ones(2))
        o1, o2 = lib.optim.SGD([w1], lr=0.1), lib.optim.SGD([w2], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
        out = []
        for step in range(4):
            o1.zero_grad()
            o2.zero_grad()
            scaler.scale((w1 * 2).sum() + (w2 * 3).sum()).backward()
            if step == 1:
                w2.grad[0] = float("inf")  # only the second optimizer skips
            scaler.step(o1)
            scaler.step(o2)
            scaler.update(16.0 if step == 2 else None)
            out.append((scaler.get_scale(), w1.tolist(), w2.tolist()))
        scaler.update(lib.tensor(4.0))
        return out, scaler.get_scale()

    (got, got_final), (want, want_final) = run(ember), run(torch)
    assert [g[0] for g in got] == [w[0] for w in want] and got_final == want_final
    np.testing.assert_allclose([g[1:] for g in got], [w[1:] for w in want], rtol=1e-6)


def test_state_dict_and_pickle():
    scaler = ember.amp.GradScaler("cpu", init_scale=32.0, growth_interval=7)
    w = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([w], lr=0.1)
    scaler.scale(w.sum()).backward()
    scaler.step(opt)
    scaler.update()
    state = scaler.state_dict()
    assert state == {"scale": 32.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                     "growth_interval": 7, "_growth_tracker": 1}  # fmt: skip
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.state_dict() == state
    copied = pickle.loads(pickle.dumps(scaler))
    assert copied.state_dict() == state
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        other.load_state_dict({})


def test_disabled_is_a_pass_through():
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    w = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([w], lr=0.5)
    loss = w.sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == [0.5, 0.5]
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {} and not scaler.is_enabled()


def test_errors_as_pytorch():
    w = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([w], lr=0.1)
    scaler = ember.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match=r"did not use scaler\.scale"):
        scaler.step(opt)
    scaler.scale(w.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step"):
        scaler.unscale_(opt)
    scaler.update()
    half = ember.nn.Parameter(ember.ones(2, dtype=ember.float16))
    half_opt = ember.optim.SGD([half], lr=0.1)
    scaler.scale(half.float().sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.step(half_opt)
    with pytest.raises(AssertionError, match=r"growth factor must be > 1\.0"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)


def test_op_checks():
    grads = [ember.ones(2), ember.ones(2, dtype=ember.bfloat16)]
    found, inv = ember.zeros(()), ember.ones(())
    with pytest.raises(RuntimeError, match="same device and dtype"):
        ember._amp_foreach_non_finite_check_and_unscale_(grads, found, inv)
    with pytest.raises(RuntimeError, match="inv_scale must be a float tensor"):
        ember._amp_foreach_non_finite_check_and_unscale_(grads[:1], found, inv.double())
    with pytest.raises(RuntimeError, match="found_inf must be a 1-element tensor"):
        ember._amp_foreach_non_finite_check_and_unscale_(grads[:1], ember.zeros(2), inv)
    tracker = ember.zeros((), dtype=ember.int32)
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
        ember._amp_update_scale_(ember.ones(()), tracker.float(), found, 2.0, 0.5, 10)
