"""``ember._foreach_*`` (ember/_foreach.py) against ``torch._foreach_*``: every name of its
tables over each overload (a tensor list, a number, a list of numbers, a 0-dim tensor, alpha),
out of place (a tuple) and in place (the same list, written), PyTorch's errors, and gradients
through a list."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember import _foreach

SHAPES = [(2,), (3, 4), ()]


def _lists(seed: int, low=0.1, high=0.9):
    """The same float64 values as an ember list and a torch list."""
    rng = np.random.default_rng(seed)
    values = [rng.uniform(low, high, shape) for shape in SHAPES]
    return [ember.tensor(v) for v in values], [torch.tensor(v) for v in values]


def _same(ours, theirs) -> None:
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape) and str(o.dtype) == str(t.dtype).replace("torch", "ember")
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


def _both(call_ours, call_theirs):
    """Both calls' results, or (None, None) when both raise errors of one type."""
    try:
        want = call_theirs()
    except (RuntimeError, TypeError) as error:
        with pytest.raises(type(error)):
            call_ours()
        return None, None
    return call_ours(), want


@pytest.mark.parametrize("name", _foreach.UNARY)
def test_unary(name):
    ours, theirs = _lists(0)
    got, want = _both(
        lambda: getattr(ember, f"_foreach_{name}")(ours),
        lambda: getattr(torch, f"_foreach_{name}")(theirs),
    )
    assert isinstance(got, tuple)
    _same(got, want)
    returned = getattr(ember, f"_foreach_{name}_")(ours)
    getattr(torch, f"_foreach_{name}_")(theirs)
    assert returned is ours
    _same(ours, theirs)


def _other(kind: str, lib, seed: int):
    if kind == "List":
        return _lists(seed)[0 if lib is ember else 1]
    if kind == "Scalar":
        return 0.75
    if kind == "ScalarList":
        return [0.5, 2.0, -1.5]
    return lib.tensor(1.25)  # Tensor


def _check(inplace: str, ours, theirs, got, want) -> None:
    if want is None:  # both raised
        return
    if inplace:
        assert got is ours
    _same(got, want)
    _same(ours, theirs)


@pytest.mark.parametrize("inplace", ["", "_"])
@pytest.mark.parametrize("alpha", [None, 0.5])
@pytest.mark.parametrize("kind", ["List", "Scalar", "ScalarList", "Tensor"])
@pytest.mark.parametrize("name", sorted(_foreach.BINARY))
def test_binary(name, kind, alpha, inplace):
    keywords = {} if alpha is None else {"alpha": alpha}
    ours, theirs = _lists(1)
    fn, tfn = (getattr(lib, f"_foreach_{name}{inplace}") for lib in (ember, torch))
    got, want = _both(
        lambda: fn(ours, _other(kind, ember, 2), **keywords),
        lambda: tfn(theirs, _other(kind, torch, 2), **keywords),
    )
    _check(inplace, ours, theirs, got, want)


@pytest.mark.parametrize("inplace", ["", "_"])
@pytest.mark.parametrize("kind", ["Scalar", "ScalarList", "Tensor"])
@pytest.mark.parametrize("name", _foreach.TERNARY)
def test_ternary(name, kind, inplace):
    (ours, a, b), (theirs, ta, tb) = zip(_lists(3), _lists(4), _lists(5))
    value = {"Scalar": 0.5, "ScalarList": [0.5, 2.0, 3.0]}.get(kind)
    fn, tfn = (getattr(lib, f"_foreach_{name}{inplace}") for lib in (ember, torch))
    got, want = _both(
        lambda: fn(ours, a, b, ember.tensor([0.5, 2.0, 3.0]) if value is None else value),
        lambda: tfn(theirs, ta, tb, torch.tensor([0.5, 2.0, 3.0]) if value is None else value),
    )
    _check(inplace, ours, theirs, got, want)


@pytest.mark.parametrize("inplace", ["", "_"])
@pytest.mark.parametrize("kind", ["List", "Scalar", "ScalarList"])
def test_lerp(kind, inplace):
    (ours, ends), (theirs, tends) = zip(_lists(6), _lists(7))
    fn, tfn = (getattr(lib, f"_foreach_lerp{inplace}") for lib in (ember, torch))
    got, want = _both(
        lambda: fn(ours, ends, _other(kind, ember, 8)),
        lambda: tfn(theirs, tends, _other(kind, torch, 8)),
    )
    _check(inplace, ours, theirs, got, want)


def test_the_rest_of_the_names():
    ours, theirs = _lists(9)
    _same(ember._foreach_pow(2.0, ours), torch._foreach_pow(2.0, theirs))
    _same(ember._foreach_clone(ours), torch._foreach_clone(theirs))
    _same(ember._foreach_max(ours), torch._foreach_max(theirs))
    norms = ember._foreach_norm(ours)
    assert isinstance(norms, tuple)
    _same(norms, torch._foreach_norm(theirs))
    sources, tsources = _lists(10)
    assert ember._foreach_copy_(ours, sources) is ours
    torch._foreach_copy_(theirs, tsources)
    _same(ours, theirs)
    assert ember._foreach_zero_(ours) is ours
    _same(ours, torch._foreach_zero_(theirs))
    ints = [ember.tensor([1, 2]), ember.tensor([3])]
    _same(
        ember._foreach_add(ints, 1.5),
        torch._foreach_add([torch.tensor([1, 2]), torch.tensor([3])], 1.5),
    )


@pytest.mark.parametrize("ord", [2, 3, 1, 0, 0.5])
def test_powsum(ord):
    ours, theirs = _lists(16, low=-0.9, high=0.9)
    _same(ember._foreach_powsum(ours, ord), torch._foreach_powsum(theirs, ord))
    floats = [t.float() for t in ours]
    tfloats = [t.float() for t in theirs]
    got = ember._foreach_powsum(floats, ord, dtype=ember.float64)
    want = torch._foreach_powsum(tfloats, ord, dtype=torch.float64)
    _same(got, want)


def test_mm():
    rng = np.random.default_rng(17)
    pairs = [(rng.standard_normal((2, 3)), rng.standard_normal((3, 4))) for _ in range(2)]
    got = ember._foreach_mm(
        [ember.tensor(a) for a, _ in pairs], [ember.tensor(b) for _, b in pairs]
    )
    want = torch._foreach_mm(
        [torch.tensor(a) for a, _ in pairs], [torch.tensor(b) for _, b in pairs]
    )
    _same(got, want)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember._foreach_mm([ember.ones(2, 3)], [ember.ones(2, 4)])


def test_errors_as_pytorch():
    ours, _ = _lists(11)
    with pytest.raises(RuntimeError, match="same number of tensors, got 3 and 2"):
        ember._foreach_add(ours, ours[:2])
    with pytest.raises(RuntimeError, match="at least one tensor"):
        ember._foreach_add([], 1)
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        ember._foreach_mul(ours, [1.0])
    with pytest.raises(RuntimeError, match="expected to be 0 dim but it has 1 dimensions"):
        ember._foreach_mul(ours, ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        ember._foreach_add(ours, "x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'alpha'"):
        ember._foreach_mul(ours, ours, alpha=2)


def test_gradients_through_a_list():
    (a, b), (ta, tb) = zip(_lists(12), _lists(13))
    for t in (*a, *b, *ta, *tb):
        t.requires_grad_(True)
    mine = ember._foreach_addcmul(ember._foreach_mul(a, b), a, b, 0.5)
    theirs = torch._foreach_addcmul(torch._foreach_mul(ta, tb), ta, tb, 0.5)
    sum(m.sum() for m in ember._foreach_exp(mine)).backward()
    sum(t.sum() for t in torch._foreach_exp(theirs)).backward()
    for o, t in zip((*a, *b), (*ta, *tb)):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_optimizer_style_update_in_place():
    """An update as custom optimizers write it: decay, then a step against the gradients."""
    (params, grads), (tparams, tgrads) = zip(_lists(14), _lists(15))
    for lib, p, g in ((ember, params, grads), (torch, tparams, tgrads)):
        lib._foreach_mul_(p, 1 - 0.1 * 0.01)
        lib._foreach_add_(p, g, alpha=-0.1)
        lib._foreach_addcdiv_(p, g, lib._foreach_add(lib._foreach_sqrt(g), 1e-8), value=-0.01)
    _same(params, tparams)
