"""ember.func.functionalize against torch.func.functionalize (eager): outputs, input mutations
written back, outputs aliasing neither inputs nor (mutations_and_views) each other."""

import numpy as np
import pytest
import torch

import ember


def mutate_input(lib, x, y):
    x.add_(y)
    return x * 2


def mutate_view_of_input(lib, x, y):
    v = x.view(-1)
    v.mul_(3)
    x[0].add_(y[0])
    return v, x[1]


def mutate_intermediate(lib, x, y):
    t = x + y
    t.sin_()
    t[0].zero_()
    return t.sum(0)


def return_input(lib, x, y):
    return x, y.t()


def two_views(lib, x, y):
    v = x.transpose(0, 1)
    return v, v.reshape(-1)


def mixed(lib, x, y):
    x.add_(1)
    return y.t(), y[0], x, x.t(), y


CASES = [mixed, mutate_input, mutate_view_of_input, mutate_intermediate, return_input, two_views]


def _pair(lib, arrays):
    return [lib.tensor(a) for a in arrays]


def _run(lib, case, remove, arrays):
    x, y = _pair(lib, arrays)
    fn = lib.func.functionalize(lambda a, b: case(lib, a, b), remove=remove)
    out = fn(x, y)
    outs = out if isinstance(out, tuple) else (out,)
    ptrs = {t.untyped_storage().data_ptr() for t in (x, y)}
    aliasing = [t is x or t is y or t.untyped_storage().data_ptr() in ptrs for t in outs]
    shared = len({t.untyped_storage().data_ptr() for t in outs}) < len(outs)
    return [t.numpy().copy() for t in outs], x.numpy().copy(), y.numpy().copy(), aliasing, shared


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_matches_torch(case, remove):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((2, 2)).astype(np.float32) for _ in range(2)]
    got = _run(ember, case, remove, arrays)
    want = _run(torch, case, remove, arrays)
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)  # input mutations written back
    np.testing.assert_allclose(got[2], want[2], rtol=1e-6)
    assert got[3] == want[3]  # which outputs are (or alias) inputs
    if remove == "mutations_and_views":
        assert got[4] == want[4]


def test_mutation_applied_once_at_the_end():
    seen = []

    def f(x):
        x.add_(1)
        seen.append(float(original[0]))  # the caller's tensor is not touched in the middle
        return x

    original = ember.zeros(1)
    out = ember.func.functionalize(f)(original)
    assert seen == [0.0]
    assert out is not original and float(original[0]) == 1.0 == float(out[0])


def test_gradients_flow_to_inputs():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    for lib, t in ((ember, x), (torch, tx)):

        def f(a, lib=lib):
            b = a * 2
            b.mul_(a)
            return b.sin()

        lib.func.functionalize(f)(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_invalid_remove():
    with pytest.raises(RuntimeError, match="received invalid argument for remove=x"):
        ember.func.functionalize(lambda x: x, remove="x")
