"""Muon against torch.optim.Muon: 20-step trajectories of 2-D parameters, options, errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

STEPS = 20
SHAPES = [(6, 4), (3, 5), (4, 4)]  # tall, wide (transposed inside the iteration), square
CONFIGS = [
    {},
    {"lr": 0.02, "momentum": 0.9, "nesterov": False},
    {"lr": 0.02, "weight_decay": 0.0, "adjust_lr_fn": "match_rms_adamw"},
    {"lr": 0.02, "ns_steps": 3, "ns_coefficients": (3.0, -3.2, 1.2), "eps": 1e-5},
]


def _trajectories(kwargs: dict, dtype: str):
    """Both libraries' parameters after each step of a noisy quadratic, gradients in numpy."""
    rng = np.random.default_rng(5)
    start = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    targets = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    noise = [
        [rng.standard_normal(shape).astype(dtype) * 0.1 for shape in SHAPES] for _ in range(STEPS)
    ]
    ours = [ember.tensor(a.copy(), requires_grad=True) for a in start]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in start]
    opt, ref = ember.optim.Muon(ours, **kwargs), torch.optim.Muon(theirs, **kwargs)
    found = []
    for step in range(STEPS):
        for params in (ours, theirs):
            for p, target, n in zip(params, targets, noise[step]):
                grad = 2 * (p.detach().numpy() - target) + n
                p.grad = (ember if params is ours else torch).tensor(grad)
        opt.step()
        ref.step()
        found.append(
            ([p.detach().numpy().copy() for p in ours], [p.detach().numpy().copy() for p in theirs])
        )
    return found


def _exact_newtonschulz(lib):
    """The Newton-Schulz iteration of both libraries without its bfloat16 cast: in bfloat16,
    a last-bit difference of one GEMM grows through the quintic, so the optimizer's own
    arithmetic is compared with this exact one and the iteration is compared on its own."""

    def iterate(grad, ns_coefficients, ns_steps, eps):
        a, b, c = ns_coefficients
        tall = grad.size(0) > grad.size(1)
        ortho = grad.double().T if tall else grad.double()
        ortho = ortho / ortho.norm().clamp(min=eps)
        for _ in range(ns_steps):
            gram = ortho @ ortho.T
            ortho = lib.addmm(ortho, lib.addmm(gram, gram, gram, beta=b, alpha=c), ortho, beta=a)
        return ortho.T if tall else ortho

    return iterate


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", CONFIGS, ids=str)
def test_trajectory_matches_torch(kwargs, dtype, monkeypatch):
    import torch.optim._muon as torch_muon

    import ember.optim.muon as ember_muon

    monkeypatch.setattr(ember_muon, "zeropower_via_newtonschulz", _exact_newtonschulz(ember))
    monkeypatch.setattr(torch_muon, "_zeropower_via_newtonschulz", _exact_newtonschulz(torch))
    tolerance = 1e-5 if dtype == "float32" else 1e-10
    for step, (ours, theirs) in enumerate(_trajectories(kwargs, dtype)):
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance, err_msg=f"step {step}")


@pytest.mark.parametrize("shape", SHAPES)
def test_the_bfloat16_iteration_matches_torchs(shape):
    import torch.optim._muon as torch_muon

    from ember.optim.muon import DEFAULT_NS_COEFFICIENTS, zeropower_via_newtonschulz

    grad = np.random.default_rng(1).standard_normal(shape)
    ours = zeropower_via_newtonschulz(ember.tensor(grad), DEFAULT_NS_COEFFICIENTS, 5, 1e-7)
    theirs = torch_muon._zeropower_via_newtonschulz(
        torch.tensor(grad), DEFAULT_NS_COEFFICIENTS, 5, 1e-7
    )
    assert ours.dtype == ember.bfloat16 and ours.shape == tuple(theirs.shape)
    # Values are about 1. ember's bfloat16 addmm rounds the product before adding beta * input
    # where torch's rounds once, and five quintic rounds amplify that last-bit difference to a
    # few bfloat16 steps (0.0078 each); a wrong coefficient, transpose or norm is off by ~1.
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), atol=0.12)


def test_state_dict_has_torchs_groups_and_buffers():
    p = ember.zeros(3, 2, requires_grad=True)
    q = torch.zeros(3, 2, requires_grad=True)
    opt, ref = ember.optim.Muon([p]), torch.optim.Muon([q])
    p.grad, q.grad = ember.ones(3, 2), torch.ones(3, 2)
    opt.step()
    ref.step()
    ours, theirs = opt.state_dict(), ref.state_dict()
    assert ours["param_groups"] == theirs["param_groups"]
    assert set(ours["state"][0]) == set(theirs["state"][0]) == {"momentum_buffer"}


@pytest.mark.parametrize(
    "kwargs",
    [{"lr": -1.0}, {"momentum": -0.5}, {"weight_decay": -0.1}, {"adjust_lr_fn": "nope"}],
    ids=str,
)
def test_bad_arguments_raise_torchs_errors(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], **kwargs)
    with pytest.raises(
        ValueError, match=f"^{theirs.value}$".replace("(", r"\(").replace(")", r"\)")
    ):
        ember.optim.Muon([ember.zeros(2, 2, requires_grad=True)], **kwargs)


def test_non_matrix_parameters_are_refused():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        ember.optim.Muon([ember.zeros(3, requires_grad=True)])
