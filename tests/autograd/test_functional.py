"""ember.autograd.functional against torch.autograd.functional: jacobian, hessian, vjp, jvp,
hvp, vhp on single and several inputs and outputs, unused inputs, strict and create_graph."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .oracle import torch

RNG = np.random.default_rng(7)
X = RNG.uniform(0.5, 1.5, (3,))
Y = RNG.uniform(-1.0, 1.0, (2, 3))
V3 = RNG.standard_normal(3)
V23 = RNG.standard_normal((2, 3))


def one_to_one(lib, x):
    return x.sin() * x.exp()


def two_to_two(lib, x, y):
    return x * y, (y * y).sum(0) + x.log()


def scalar_of_one(lib, x):
    return (x.exp() * x * x).sum()


def scalar_of_two(lib, x, y):
    return (x * y * y).sum() + (x**3).sum()


def unused_second(lib, x, y):
    return x * 2


def constant(lib, x):
    return lib.ones(2, dtype=lib.float64)


# (name, function, inputs, v for vjp (over outputs), v for jvp (over inputs))
CASES = [
    ("one_to_one", one_to_one, (X,), (V3,), (V3,)),
    ("two_to_two", two_to_two, (X, Y), (V23, V3), (V3, V23)),
    ("unused_input", unused_second, (X, Y), (V3,), (V3, V23)),
    ("constant", constant, (X,), (np.ones(2),), (V3,)),
]
SCALARS = [
    ("scalar_of_one", scalar_of_one, (X,), (V3,)),
    ("scalar_of_two", scalar_of_two, (X, Y), (V3, V23)),
]


def _run(lib, device, method, fn, inputs, *vectors, **kw):
    dev = {"device": device} if lib is ember else {}

    def tensors(arrays):
        made = tuple(lib.tensor(a, **dev) for a in arrays)
        return made[0] if len(made) == 1 else made

    args = [tensors(inputs)] + [tensors(v) for v in vectors]
    result = getattr(lib.autograd.functional, method)(lambda *t: fn(lib, *t), *args, **kw)
    return _flat(result)


def _flat(result) -> list:
    if isinstance(result, (tuple, list)):
        return [a for item in result for a in _flat(item)]
    return [result.detach().cpu().numpy()]


def _same(ours, theirs, what):
    assert len(ours) == len(theirs), what
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == b.shape, f"{what}, result {i}: shape {a.shape} vs {b.shape}"
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"{what}, result {i}")


@pytest.mark.parametrize("name, fn, inputs, v_out, v_in", CASES, ids=[c[0] for c in CASES])
def test_jacobian_vjp_jvp_match_pytorch(device, name, fn, inputs, v_out, v_in):
    for method, vectors in (("jacobian", ()), ("vjp", (v_out,)), ("jvp", (v_in,))):
        ours = _run(ember, device, method, fn, inputs, *vectors)
        theirs = _run(torch, device, method, fn, inputs, *vectors)
        _same(ours, theirs, f"{method} of {name}")


@pytest.mark.parametrize("name, fn, inputs, v", SCALARS, ids=[c[0] for c in SCALARS])
def test_hessian_hvp_vhp_match_pytorch(device, name, fn, inputs, v):
    for method, vectors in (("hessian", ()), ("hvp", (v,)), ("vhp", (v,)), ("vjp", ())):
        ours = _run(ember, device, method, fn, inputs, *vectors)
        theirs = _run(torch, device, method, fn, inputs, *vectors)
        _same(ours, theirs, f"{method} of {name}")


@pytest.mark.parametrize("method", ["jacobian", "vjp"])
def test_strict_rejects_unused_inputs(device, method):
    vectors = () if method == "jacobian" else ((V3,),)
    with pytest.raises(
        RuntimeError, match=r"independent of input 1\. This is not allowed in strict"
    ):
        _run(ember, device, method, unused_second, (X, Y), *vectors, strict=True)


def test_create_graph_keeps_results_differentiable(device):
    x = ember.tensor(X, device=device).requires_grad_()
    jac = ember.autograd.functional.jacobian(lambda t: t * t * t, x, create_graph=True)
    assert jac.requires_grad
    (second,) = ember.autograd.grad(jac.sum(), x)
    np.testing.assert_allclose(second.cpu().numpy(), 6 * X)
    plain = ember.autograd.functional.jacobian(lambda t: t * t * t, x)
    assert not plain.requires_grad and x.grad is None


def test_vector_needed_for_non_scalar_outputs(device):
    with pytest.raises(RuntimeError, match="v can only be None"):
        _run(ember, device, "vjp", one_to_one, (X,))


@pytest.mark.parametrize(
    "kw",
    [{"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}],
    ids=["vectorized", "forward-mode"],
)
def test_jacobian_strategies_match_pytorch(device, kw):
    for name, fn, inputs, _, _ in CASES:
        ours = _run(ember, device, "jacobian", fn, inputs, **kw)
        theirs = _run(torch, device, "jacobian", fn, inputs, **kw)
        _same(ours, theirs, f"jacobian {kw} of {name}")


@pytest.mark.parametrize(
    "kw",
    [{"vectorize": True}, {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}],
    ids=["vectorized", "forward-over-reverse"],
)
def test_hessian_strategies_match_pytorch(device, kw):
    for name, fn, inputs, _ in SCALARS:
        ours = _run(ember, device, "hessian", fn, inputs, **kw)
        theirs = _run(torch, device, "hessian", fn, inputs, **kw)
        _same(ours, theirs, f"hessian {kw} of {name}")


def _message(lib, call) -> str:
    try:
        call(lib)
    except Exception as exc:  # the comparison is the point: any error type
        return f"{type(exc).__name__}: {exc}".replace("torch.Size", "Size").replace(
            "ember.Size", "Size"
        )
    return "no error"


MISUSES = {
    "hvp of a vector function": lambda lib: lib.autograd.functional.hvp(
        lambda a: a * 2, lib.tensor(X), lib.tensor(X)
    ),
    "v of the wrong size": lambda lib: lib.autograd.functional.jvp(
        lambda a: a * 2, lib.tensor(X), lib.tensor(Y)
    ),
    "v of the wrong length": lambda lib: lib.autograd.functional.vjp(
        lambda a, b: (a, b), (lib.tensor(X), lib.tensor(Y)), (lib.tensor(X),)
    ),
    "strict, constant output": lambda lib: lib.autograd.functional.vjp(
        lambda a: lib.ones((), dtype=lib.float64), lib.tensor(X), strict=True
    ),
    "strict, linear hvp": lambda lib: lib.autograd.functional.hvp(
        lambda a: (a * 2).sum(), lib.tensor(X), lib.tensor(X), strict=True
    ),
    "strict, jvp of unused input": lambda lib: lib.autograd.functional.jvp(
        lambda a, b: a * 2,
        (lib.tensor(X), lib.tensor(Y)),
        (lib.tensor(X), lib.tensor(Y)),
        strict=True,
    ),
    "non-tensor input": lambda lib: lib.autograd.functional.jvp(
        lambda a, b: a * 2, (lib.tensor(X), 3)
    ),
    "vhp without v": lambda lib: lib.autograd.functional.vhp(lambda a: a.sum(), lib.tensor(X)),
}


@pytest.mark.parametrize("name", sorted(MISUSES))
def test_errors_match_pytorch(name):
    assert _message(ember, MISUSES[name]) == _message(torch, MISUSES[name])


def test_hvp_and_vhp_create_graph(device):
    x = ember.tensor(X, device=device).requires_grad_()
    v = ember.tensor(V3, device=device)
    for method in ("hvp", "vhp"):
        _, result = getattr(ember.autograd.functional, method)(
            lambda t: (t**4).sum(), x, v, create_graph=True
        )
        assert result.requires_grad
        (third,) = ember.autograd.grad(result.sum(), x)
        np.testing.assert_allclose(third.cpu().numpy(), 24 * X * V3)
