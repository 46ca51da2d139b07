"""In-place views (t_, transpose_, swapdims_, swapaxes_, squeeze_, unsqueeze_, as_strided_,
resize_, detach_) under vmap, forward AD and the func transforms, against PyTorch on the same
program: shapes, values and tangents in float64, and PyTorch's errors where it refuses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

# name -> an in-place view of a per-sample tensor of shape (4, 5), the same code for both libraries
VIEWS = {
    "t_": lambda t: t.t_(),
    "transpose_": lambda t: t.transpose_(0, 1),
    "transpose_neg": lambda t: t.transpose_(-1, 0),
    "swapdims_": lambda t: t.swapdims_(1, 0),
    "swapaxes_": lambda t: t.swapaxes_(0, -1),
    "unsqueeze_": lambda t: t.unsqueeze_(1),
    "unsqueeze_end": lambda t: t.unsqueeze_(-1),
    "squeeze_": lambda t: t.unsqueeze(0).unsqueeze(2).squeeze_(),
    "squeeze_dim": lambda t: t.unsqueeze(1).squeeze_(1),
    "squeeze_dims": lambda t: t.unsqueeze(0).unsqueeze(2).squeeze_((0, 2)),
    "squeeze_kept": lambda t: t.squeeze_(0),  # size 4: nothing squeezed
    "chain": lambda t: t.unsqueeze_(0).transpose_(0, 2).squeeze_(1),
}
SAMPLE = (4, 5)
BATCH = 3


def _values(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


def _tensor(lib, values, device=None):
    if lib is torch:
        return torch.tensor(values)
    return ember.tensor(values, device=device)


def _assert_same(mine, theirs):
    mine, theirs = _numpy(mine), _numpy(theirs)
    assert mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)


# ---- vmap ---------------------------------------------------------------------------------------
def _vmapped(lib, view, in_dims, out_dims, device=None):
    x = _tensor(lib, _values((BATCH, *SAMPLE)), device).movedim(0, in_dims)
    result = lib.func.vmap(lambda t: view(t.clone()) * 2, in_dims=in_dims, out_dims=out_dims)(x)
    return result


@pytest.mark.parametrize("name", VIEWS)
@pytest.mark.parametrize("in_dims, out_dims", [(0, 0), (1, 0), (2, 1), (-1, -1)])
def test_vmap_of_inplace_view(name, in_dims, out_dims, device):
    view = VIEWS[name]
    mine = _vmapped(ember, view, in_dims, out_dims, device)
    _assert_same(mine, _vmapped(torch, view, in_dims, out_dims))


@pytest.mark.parametrize("name", VIEWS)
def test_nested_vmap_of_inplace_view(name, device):
    def run(lib, device=None):
        x = _tensor(lib, _values((2, *SAMPLE, BATCH)), device)
        inner = lib.func.vmap(lambda t: VIEWS[name](t + 0), in_dims=1, out_dims=1)
        return lib.func.vmap(inner, in_dims=-1)(x)

    _assert_same(run(ember, device), run(torch))


@pytest.mark.parametrize("name", VIEWS)
@pytest.mark.parametrize("in_dims", [0, 1, 2])
def test_vmap_mutates_the_input_as_pytorch(name, in_dims):
    """The caller's tensor takes the view too, its batch dim kept among the other dims as
    functorch's in-place rules keep it: shape, strides and values."""

    def run(lib):
        x = _tensor(lib, _values((BATCH, *SAMPLE)).transpose(1, 0, 2).copy()).movedim(1, in_dims)
        result = lib.func.vmap(VIEWS[name], in_dims=in_dims)(x)
        return x, tuple(x.stride()), result

    mine, theirs = run(ember), run(torch)
    _assert_same(mine[0], theirs[0])
    assert mine[1] == theirs[1]
    _assert_same(mine[2], theirs[2])


def test_nested_vmap_mutates_the_input_as_pytorch():
    def run(lib):
        x = _tensor(lib, _values((BATCH, *SAMPLE)))
        inner = lib.func.vmap(lambda t: t.unsqueeze_(0).t_(), in_dims=1)
        lib.func.vmap(inner, in_dims=2)(x)
        return x, tuple(x.stride())

    mine, theirs = run(ember), run(torch)
    _assert_same(mine[0], theirs[0])
    assert mine[1] == theirs[1]


@pytest.mark.parametrize("in_dims", [0, 1])
def test_vmap_inplace_view_with_grad_as_pytorch(in_dims):
    """A leaf that requires grad is refused as itself; a non-leaf records the in-place node
    and its gradient reaches the leaf."""

    def run(lib):
        seen = []
        x = _tensor(lib, _values((BATCH, *SAMPLE))).requires_grad_()
        with pytest.raises(RuntimeError) as error:
            lib.func.vmap(lambda t: t.t_(), in_dims=in_dims)(x)
        seen.append(str(error.value).rpartition("): ")[2])
        y = x * 2
        result = lib.func.vmap(lambda t: t.t_(), in_dims=in_dims)(y)
        seen.append((tuple(y.shape), y.grad_fn.name()))
        (result * _tensor(lib, _values(tuple(result.shape), 7))).sum().backward()
        return seen, x.grad

    (seen, grad), (want, want_grad) = run(ember), run(torch)
    assert seen == want
    _assert_same(grad, want_grad)


def test_vmap_of_as_strided_():
    """Each sample's as_strided_ from its own start. PyTorch 2.13 has no batching rule for
    as_strided_ and leaves the batched tensor unchanged (its fallback views each sample's copy);
    ember gives the out-of-place op's result, which PyTorch computes the same way."""
    args = ((2, 3), (1, 2), 1)
    x = ember.tensor(_values((BATCH, *SAMPLE)))
    mine = ember.func.vmap(lambda t: t.as_strided_(*args))(x)
    theirs = torch.func.vmap(lambda t: t.as_strided(*args))(torch.tensor(_values((BATCH, *SAMPLE))))
    _assert_same(mine, theirs)
    _assert_same(x, theirs)


def test_vmap_of_resize_():
    def run(lib, size):
        x = _tensor(lib, np.arange(60.0).reshape(BATCH, *SAMPLE))
        out = lib.func.vmap(lambda t: t.clone().resize_(*size))(x).reshape(-1)
        return out[:60]  # the clone's 60 values; the memory (5, 5) grows is uninitialised

    for size in ((2, 2), (5, 5), (20,)):
        _assert_same(run(ember, size), run(torch, size))


def test_vmap_refuses_detach_():
    message = "Can't detach views in-place"
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match=message):
            lib.func.vmap(lambda t: t.clone().detach_())(_tensor(lib, _values((BATCH, 2))))


@pytest.mark.parametrize("view", [lambda t: t.transpose_(0, 5), lambda t: t.squeeze_(3)])
def test_vmap_out_of_range_dim_refused_as_pytorch(view):
    errors = []
    for lib in (ember, torch):
        with pytest.raises((IndexError, RuntimeError)) as error:
            lib.func.vmap(view)(_tensor(lib, _values((BATCH, *SAMPLE))))
        errors.append(error.type)
    assert errors[0] is errors[1]


# ---- forward AD ---------------------------------------------------------------------------------
def _dual_run(lib, view, device=None):
    fwad = lib.autograd.forward_ad
    with fwad.dual_level():
        primal = _tensor(lib, _values(SAMPLE, 1), device)
        tangent = _tensor(lib, _values(SAMPLE, 2), device)
        dual = fwad.make_dual(primal, tangent)
        y = dual * 3
        alias = y
        result = view(y)
        got = fwad.unpack_dual(result)
        aliased = fwad.unpack_dual(alias).tangent
        after = fwad.unpack_dual(result * result)  # ops after the view see its tangent
        return got.primal, got.tangent, aliased, after.tangent


@pytest.mark.parametrize("name", VIEWS)
def test_forward_ad_tangent_takes_the_view(name, device):
    mine = _dual_run(ember, VIEWS[name], device)
    theirs = _dual_run(torch, VIEWS[name])
    for a, b in zip(mine, theirs):
        _assert_same(a, b)


def test_forward_ad_as_strided_and_the_dual_itself():
    def run(lib):
        fwad = lib.autograd.forward_ad
        with fwad.dual_level():
            dual = fwad.make_dual(
                _tensor(lib, _values(SAMPLE, 1)), _tensor(lib, _values(SAMPLE, 2))
            )
            strided = fwad.unpack_dual(dual.clone().as_strided_((2, 3), (1, 4), 2)).tangent
            dual.t_()  # the dual itself (a view of its primal)
            return strided, fwad.unpack_dual(dual).tangent, fwad.unpack_dual(dual * 2).tangent

    for a, b in zip(run(ember), run(torch)):
        _assert_same(a, b)


def test_forward_ad_detach_and_resize_as_pytorch():
    def run(lib):
        fwad = lib.autograd.forward_ad
        seen = []
        with fwad.dual_level():
            dual = fwad.make_dual(
                _tensor(lib, _values(SAMPLE, 1)), _tensor(lib, _values(SAMPLE, 2))
            )
            copy = dual.clone()
            seen.append(fwad.unpack_dual(copy.detach_()).tangent is None)
            for refused in (lambda: dual.clone().resize_(4, 5), lambda: dual.detach_()):
                with pytest.raises(RuntimeError) as error:
                    refused()
                seen.append(str(error.value)[:50])
        return seen

    assert run(ember) == run(torch)


# ---- the func transforms ------------------------------------------------------------------------
def _scalar(view):
    def f(t):
        y = view(t * 1.5)
        return (y.sin() * y).sum()

    return f


@pytest.mark.parametrize("name", VIEWS)
@pytest.mark.parametrize("transform", ["jvp", "jacfwd", "jacrev", "hessian", "vmap_grad"])
def test_func_transforms_of_inplace_view(name, transform, device):
    def run(lib, device=None):
        func = lib.func
        x = _tensor(lib, _values(SAMPLE, 3), device)
        f = _scalar(VIEWS[name])
        if transform == "jvp":
            v = _tensor(lib, _values(SAMPLE, 4), device)
            return func.jvp(lambda t: VIEWS[name](t.sin()), (x,), (v,))[1]
        if transform == "jacfwd":
            return func.jacfwd(lambda t: VIEWS[name](t * t))(x)
        if transform == "jacrev":
            return func.jacrev(lambda t: VIEWS[name](t * t))(x)
        if transform == "hessian":
            return func.hessian(f)(x)
        batch = _tensor(lib, _values((BATCH, *SAMPLE), 5), device)
        return func.vmap(func.grad(f))(batch)

    _assert_same(run(ember, device), run(torch))
