"""ember.func against torch.func on the same functions: values, Jacobians, Hessians, the
structure of results, compositions of transforms, and PyTorch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.func as TF

import ember
import ember.func as F

from ..nn.oracle import copy_state


def _t(x):
    return torch.tensor(np.asarray(x.detach().numpy()))


def _e(x):
    return ember.tensor(x.detach().numpy())


def _close(got, want, atol=1e-6):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, atol)
        return
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            _close(got[k], want[k], atol)
        return
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=atol, rtol=1e-5)


@pytest.fixture
def x64():
    return ember.randn(4, dtype=ember.float64)


def f_scalar(x):
    return (x.sin() * x).sum() + (x * x).prod()


def f_vector(x):
    return (x.tanh() * x.exp()).cumsum(0)


def f_two(x, y):
    return (x.unsqueeze(1) * y.cos()).sum(0), x.exp()


# ---- vmap -------------------------------------------------------------------------------------
VMAP_CASES = [
    (lambda x: x.sum(0), 0, 0, [(3, 4)]),
    (lambda x: x.t() @ x, 1, 0, [(3, 5, 4)]),
    (lambda x, y: x * y, (0, None), 0, [(3, 4), (4,)]),
    (lambda x, y: (x @ y).softmax(-1), (None, 2), 1, [(4, 5), (5, 6, 3)]),
    (lambda x: (x.max(0).values, x.argmax(-1)), -1, (0, 1), [(2, 3, 5)]),
    (lambda d: d["a"] + d["b"].sum(), ({"a": 0, "b": 1},), 0, [{"a": (3, 2), "b": (2, 3)}]),
    (lambda xs: xs[0].exp() - xs[1], ([0, 0],), 0, [[(3, 2), (3, 2)]]),
]


def _build(spec, rng):
    if isinstance(spec, dict):
        return {k: _build(v, rng) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_build(v, rng) for v in spec]
    return rng.standard_normal(spec)


def _to(lib, tree):
    if isinstance(tree, dict):
        return {k: _to(lib, v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_to(lib, v) for v in tree]
    return lib.tensor(tree)


@pytest.mark.parametrize("case", range(len(VMAP_CASES)))
def test_vmap_matches_torch(case, rng):
    fn, in_dims, out_dims, specs = VMAP_CASES[case]
    data = [_build(s, rng) for s in specs]
    got = F.vmap(fn, in_dims=in_dims, out_dims=out_dims)(*[_to(ember, d) for d in data])
    want = TF.vmap(fn, in_dims=in_dims, out_dims=out_dims)(*[_to(torch, d) for d in data])
    _close(got, want)


def test_vmap_chunked_equals_whole(rng):
    x = ember.tensor(rng.standard_normal((7, 3)))
    whole = F.vmap(lambda v: v.outer(v).sum(0))(x)
    for chunk in (1, 2, 7, 10):
        _close(F.vmap(lambda v: v.outer(v).sum(0), chunk_size=chunk)(x), whole)


def test_nested_vmap_matches_torch(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3))

    def fn(x, y):
        return (x * y).sum()

    got = F.vmap(F.vmap(fn, in_dims=(0, None)), in_dims=(None, 1))(ember.tensor(a), ember.tensor(b))
    want = TF.vmap(TF.vmap(fn, in_dims=(0, None)), in_dims=(None, 1))(
        torch.tensor(a), torch.tensor(b)
    )
    _close(got, want)


def test_vmap_unbatched_output_is_expanded():
    out = F.vmap(lambda x: ember.ones(3))(ember.zeros(2, 4))
    assert tuple(out.shape) == (2, 3) and out.stride() == (0, 1)


@pytest.mark.parametrize(
    "make",
    [
        lambda x, lib: x.new_ones(size=(), dtype=lib.bool),  # flex_attention's noop_mask
        lambda x, lib: x.new_zeros(size=[2, 1]),
        lambda x, lib: x.new_empty(size=(2,)).fill_(3),
        lambda x, lib: x.new_ones((2,)) + x.new_zeros(2),
    ],
)
def test_vmap_new_tensors_with_size_as_keyword(make):
    got = F.vmap(lambda x: make(x, ember))(ember.zeros(3, 4))
    want = TF.vmap(lambda x: make(x, torch))(torch.zeros(3, 4))
    assert tuple(got.shape) == tuple(want.shape) and got.dtype.is_floating_point == (
        want.dtype.is_floating_point
    )
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_randomness_modes():
    x = ember.zeros(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda v: v + ember.randn(3))(x)
    different = F.vmap(lambda v: v + ember.randn(3), randomness="different")(x)
    assert len({tuple(row) for row in different.tolist()}) == 4
    same = F.vmap(lambda v: v + ember.rand(3), randomness="same")(x)
    assert all(row == same.tolist()[0] for row in same.tolist())
    inplace = F.vmap(lambda v: v.clone().normal_(), randomness="same")(x)
    assert all(row == inplace.tolist()[0] for row in inplace.tolist())
    with pytest.raises(RuntimeError, match="different inplace randomness on an unbatched"):
        F.vmap(lambda v: ember.zeros(3).normal_() + v, randomness="different")(x)
    chunked = F.vmap(lambda v: v + ember.rand(3), randomness="same", chunk_size=2)(x)
    assert all(row == chunked.tolist()[0] for row in chunked.tolist())


def test_dropout_under_vmap_draws_per_sample():
    drop = ember.nn.Dropout(0.5)
    out = F.vmap(drop, randomness="different")(ember.ones(6, 50))
    assert len({tuple(row) for row in out.tolist()}) == 6


def _same_error(call_ember, call_torch):
    with pytest.raises(Exception) as torch_error:
        call_torch()
    with pytest.raises(type(torch_error.value)) as ember_error:
        call_ember()
    assert str(ember_error.value) == str(torch_error.value)


def named(x):
    return x


def returns_int(x):
    return 1


@pytest.mark.parametrize(
    "kwargs, args",
    [
        ({"in_dims": 1}, [(2,)]),
        ({"in_dims": (0, 0)}, [(2,)]),
        ({"in_dims": None}, [(2,)]),
        ({"in_dims": (None,)}, [(2,)]),
        ({}, [(2, 3), (3, 2)]),
        ({"out_dims": None}, [(2,)]),
        ({"out_dims": "x"}, [(2,)]),
        ({"randomness": "sometimes"}, [(2,)]),
    ],
)
def test_vmap_errors_as_torch(kwargs, args):
    fn = named if len(args) == 1 else (lambda x, y: x)
    e_args = [ember.zeros(*s) for s in args]
    t_args = [torch.zeros(*s) for s in args]
    _same_error(lambda: F.vmap(fn, **kwargs)(*e_args), lambda: TF.vmap(fn, **kwargs)(*t_args))


def test_vmap_non_tensor_output_error_as_torch():
    _same_error(
        lambda: F.vmap(returns_int)(ember.zeros(2)), lambda: TF.vmap(returns_int)(torch.zeros(2))
    )


def test_data_dependent_python_is_refused():
    with pytest.raises(RuntimeError, match=r"calling \.item"):
        F.vmap(lambda x: x.sum().item())(ember.zeros(2, 3))
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        F.vmap(lambda x: x if x.sum() > 0 else -x)(ember.zeros(2, 3))


def test_fallback_warns_once_with_torch_wording(monkeypatch):
    from ember.autograd import batch_rules

    # once per process: an earlier test in this worker (xdist's order varies) may have warned
    monkeypatch.setattr(batch_rules, "_WARNED", set())
    index = ember.tensor([0, 2])
    with pytest.warns(UserWarning, match="performance drop because we have not yet implemented"):
        out = F.vmap(lambda x, s: x.clone().put_(index, s))(ember.zeros(3, 4), ember.ones(3, 2))
    assert out.tolist() == [[1.0, 0.0, 1.0, 0.0]] * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second call does not warn again
        F.vmap(lambda x, s: x.clone().put_(index, s))(ember.zeros(3, 4), ember.ones(3, 2))


# ---- grad, vjp, jvp ----------------------------------------------------------------------------
def test_grad_and_value_match_torch(x64):
    _close(F.grad(f_scalar)(x64), TF.grad(f_scalar)(_t(x64)))
    g, v = F.grad_and_value(f_scalar)(x64)
    tg, tv = TF.grad_and_value(f_scalar)(_t(x64))
    _close((g, v), (tg, tv))
    assert not g.requires_grad and not v.requires_grad


def test_grad_argnums_and_aux(x64):
    y = ember.randn(3, dtype=ember.float64)

    def fn(a, b):
        out = (a.unsqueeze(1) * b).sin().sum()
        return out, {"out": out, "b": b}

    got = F.grad(fn, argnums=(0, 1), has_aux=True)(x64, y)
    want = TF.grad(fn, argnums=(0, 1), has_aux=True)(_t(x64), _t(y))
    _close(got[0], want[0])
    _close(got[1], want[1])
    _close(F.grad(lambda a, b: fn(a, b)[0], argnums=-1)(x64, y), want[0][1])


def test_grad_errors_as_torch(x64):
    _same_error(lambda: F.grad(lambda x: x)(x64), lambda: TF.grad(lambda x: x)(_t(x64)))
    _same_error(
        lambda: F.grad(f_scalar, argnums=3)(x64), lambda: TF.grad(f_scalar, argnums=3)(_t(x64))
    )
    _same_error(
        lambda: F.grad(f_scalar, has_aux=True)(x64),
        lambda: TF.grad(f_scalar, has_aux=True)(_t(x64)),
    )


def test_vjp_matches_torch(x64):
    y = ember.randn(3, dtype=ember.float64)
    out, fn = F.vjp(f_two, x64, y)
    tout, tfn = TF.vjp(f_two, _t(x64), _t(y))
    _close(out, tout)
    ct = (ember.randn(3, dtype=ember.float64), ember.randn(4, dtype=ember.float64))
    for _ in range(2):  # vjp_fn can be called again
        _close(fn(ct), tfn(tuple(_t(c) for c in ct)))


def test_jvp_matches_torch(x64):
    y = ember.randn(3, dtype=ember.float64)
    tangents = (ember.randn(4, dtype=ember.float64), ember.randn(3, dtype=ember.float64))
    got = F.jvp(f_two, (x64, y), tangents)
    want = TF.jvp(f_two, (_t(x64), _t(y)), tuple(_t(t) for t in tangents))
    _close(got, want)
    _same_error(lambda: F.jvp(f_scalar, x64, x64), lambda: TF.jvp(f_scalar, _t(x64), _t(x64)))


def test_jacobians_match_torch(x64):
    y = ember.randn(3, dtype=ember.float64)
    for transform, reference in ((F.jacrev, TF.jacrev), (F.jacfwd, TF.jacfwd)):
        _close(transform(f_vector)(x64), reference(f_vector)(_t(x64)))
        got = transform(f_two, argnums=(0, 1))(x64, y)
        want = reference(f_two, argnums=(0, 1))(_t(x64), _t(y))
        _close(got, want)
    _close(F.jacrev(f_vector, chunk_size=3)(x64), TF.jacrev(f_vector)(_t(x64)))


def test_hessian_matches_torch_and_autograd(x64):
    _close(F.hessian(f_scalar)(x64), TF.hessian(f_scalar)(_t(x64)))
    _close(F.hessian(f_scalar)(x64), ember.autograd.functional.hessian(f_scalar, x64))
    for outer in (F.jacfwd, F.jacrev):
        for inner in (F.jacfwd, F.jacrev):
            _close(outer(inner(f_scalar))(x64), TF.hessian(f_scalar)(_t(x64)))


def test_linearize_matches_jvp(x64):
    out, jvp_fn = F.linearize(f_vector, x64)
    t = ember.randn(4, dtype=ember.float64)
    _close(out, f_vector(x64))
    _close(jvp_fn(t), F.jvp(f_vector, (x64,), (t,))[1])


# ---- compositions -------------------------------------------------------------------------------
def test_compositions_match_torch(rng):
    xs = rng.standard_normal((3, 4))
    w = rng.standard_normal(4)

    def loss(w, x):
        return ((w * x).sum().tanh() - x.mean()) ** 2

    pairs = [
        (lambda api: api.vmap(api.grad(loss), in_dims=(None, 0)), (w, xs)),
        (lambda api: api.grad(lambda w, x: api.vmap(loss, in_dims=(None, 0))(w, x).sum()), (w, xs)),
        (lambda api: api.vmap(api.jacrev(loss), in_dims=(None, 0)), (w, xs)),
        (lambda api: api.vmap(api.hessian(loss), in_dims=(None, 0)), (w, xs)),
        (lambda api: api.vmap(lambda x: api.grad(lambda v: loss(v, x))(x[0] * 0 + x)), (xs,)),
        (lambda api: api.jacrev(api.jacrev(lambda x: loss(x, x))), (w,)),
        (lambda api: api.jacfwd(api.jacfwd(lambda x: loss(x, x))), (w,)),
        (lambda api: api.grad(lambda x: api.grad(lambda v: loss(v, v))(x).sum()), (w,)),
        (lambda api: api.vmap(lambda x: api.jvp(lambda v: loss(v, v), (x,), (x,))[1]), (xs,)),
    ]
    for build, data in pairs:
        got = build(F)(*[ember.tensor(d) for d in data])
        want = build(TF)(*[torch.tensor(d) for d in data])
        _close(got, want)


def test_grad_result_is_differentiable_by_autograd(x64):
    x = x64.clone().requires_grad_()
    g = F.grad(f_scalar)(x)
    assert g.requires_grad
    g.sum().backward()
    tx = _t(x64).requires_grad_()
    TF.grad(f_scalar)(tx).sum().backward()
    _close(x.grad, tx.grad)


# ---- modules ------------------------------------------------------------------------------------
def _pair(rng):
    model = ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.Tanh(), ember.nn.Linear(5, 2))
    reference = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    copy_state(reference, model)
    return model, reference


def test_per_sample_gradients_as_the_tutorial(rng):
    model, reference = _pair(rng)
    data, targets = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))

    def per_sample(lib, api, net):
        params = {k: v.detach() for k, v in net.named_parameters()}

        def loss(p, x, t):
            out = api.functional_call(net, p, (x.unsqueeze(0),))
            return ((out - t.unsqueeze(0)) ** 2).mean()

        return api.vmap(api.grad(loss), in_dims=(None, 0, 0))(
            params, lib.tensor(data).float(), lib.tensor(targets).float()
        )

    _close(per_sample(ember, F, model), per_sample(torch, TF, reference), atol=1e-5)


def test_ensembling_as_the_tutorial(rng):
    models = [ember.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].requires_grad
    x = ember.tensor(rng.standard_normal((5, 3))).float()
    out = F.vmap(lambda p, b: F.functional_call(models[0], (p, b), (x,)))(params, buffers)
    for i, m in enumerate(models):
        _close(out[i], m(x), atol=1e-6)


def test_functional_call_semantics():
    model = ember.nn.Linear(2, 2)
    model.extra = model.weight  # tied under two names
    w = ember.ones(2, 2)
    out = F.functional_call(model, {"weight": w, "bias": ember.zeros(2)}, ember.ones(1, 2))
    assert out.tolist() == [[2.0, 2.0]]
    assert model.weight is not w and model.extra is model.weight  # restored
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        F.functional_call(model, ({"bias": w}, {"bias": w}), ember.ones(1, 2))
    with pytest.raises(RuntimeError, match="Missing key"):
        F.functional_call(model, {"weight": w}, (ember.ones(1, 2),), strict=True)
    with pytest.raises(RuntimeError, match="same class"):
        F.stack_module_state([ember.nn.Linear(2, 2), ember.nn.Tanh()])


# ---- custom Functions under the transforms -------------------------------------------------------
class _Cube(ember.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x**3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class _Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    @staticmethod
    def vmap(info, in_dims, x):
        assert info.batch_size == 4 and info.randomness == "error"
        return _Square.apply(x), in_dims[0]


class _NoRule(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_functions_under_vmap_and_grad():
    xs = ember.randn(4, 3, dtype=ember.float64)
    _close(F.vmap(_Cube.apply)(xs), xs**3)
    _close(F.vmap(F.grad(lambda x: _Cube.apply(x).sum()))(xs), 3 * xs**2)
    _close(F.vmap(F.grad(lambda x: _Square.apply(x).sum()))(xs), 2 * xs)
    with pytest.raises(RuntimeError, match="does not have vmap support"):
        F.vmap(_NoRule.apply)(xs)
